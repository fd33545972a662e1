"""Where a home's CLI server is found, as plain strings, and how a request to it is written.

A served command (``swarm.cli.entry``) needs only the home's root and two
file names in it before it hands its work to the server; this module gives
them without importing ``pathlib`` or ``typing`` (~3 ms of a served
``swarm send``). ``Home`` (``swarm.core.home``) derives the same paths, as
``Path`` objects, from these names: they are defined here only.

The client's side of the wire format (``swarm.cli.entry`` describes it; the
server's side is ``swarm.cli.served_command.Request``) is here too, for the two
clients: ``swarm`` itself, and a backend asking the server to fork a teammate
that belongs to no launcher (``fork_detached``).
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not ``typing.TYPE_CHECKING``: see the module docstring
if TYPE_CHECKING:
    import _socket
    from collections.abc import Iterable, Mapping

HOME_VARIABLE = "SWARM_HOME"
"""Chooses the home's root; unset or empty: ``~/DEFAULT_DIR``."""
DEFAULT_DIR = ".swarm"
RUN_DIR = "run"
"""Under the root: rendezvous files of the home's live processes."""
CLI_SOCKET = "cli.sock"
"""In ``RUN_DIR``: the CLI server's unix socket."""
CLI_LOCK = "cli.lock"
"""In ``RUN_DIR``: flocked by the live CLI server for its whole life; holds its pid."""
CLI_LOG = "cli-server.log"
"""In ``RUN_DIR``: the CLI server's own errors."""
SWITCH = "SWARM_CLI_SERVER"
"""``0`` turns the CLI server off (no use, no start)."""
MAGIC = b"swarm-cli/1"
"""The first field of every request."""
GO = b"G"
"""The client's answer to ``P<pid>``: run the command, tied to this connection (its status comes back as ``X``)."""
DETACH = b"D"
"""The client's answer to ``P<pid>`` for a teammate: fork it loose from this connection (``fork_detached``); the
server answers ``W<pid>`` (it runs, as that pid) or ``N`` (refused: nothing ran)."""


def home_root(env: Mapping[str, str]) -> str:
    """The absolute root ``env`` chooses (``$SWARM_HOME``, ``~`` expanded, else ``~/.swarm``), as ``Home.from_env``."""
    value = env.get(HOME_VARIABLE)
    root = os.path.expanduser(value) if value else os.path.join(os.path.expanduser("~"), DEFAULT_DIR)
    return root if os.path.isabs(root) else os.path.join(os.getcwd(), root)


def run_file(root: str, name: str) -> str:
    """The rendezvous file ``name`` (``CLI_SOCKET``, ``CLI_LOCK``, ``CLI_LOG``) of the home at ``root``."""
    return os.path.join(root, RUN_DIR, name)


def package_dir() -> str:
    """The directory of the swarm package this process runs: a server serves only callers of the same."""
    import swarm

    return os.path.dirname(os.path.abspath(swarm.__file__ or ""))


def current_umask() -> int:
    """This process's umask (read by setting it, then put back): a served command runs with its caller's."""
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def request_body(prefix: str, package: str, cwd: bytes, umask: int, argv: list[str],
                 environ: Iterable[tuple[bytes, bytes]]) -> bytes:
    """A request's body: NUL-separated ``MAGIC``, venv, package directory, cwd, umask, argc, argv, ``KEY=value``."""
    return b"\0".join([MAGIC, os.fsencode(prefix), os.fsencode(package), cwd, b"%o" % umask, b"%d" % len(argv),
                       *map(os.fsencode, argv), *(k + b"=" + v for k, v in environ)])


def send_request(conn: _socket.socket, body: bytes, fds: tuple[int, int, int]) -> None:
    """The body's length with ``fds`` (the command's 0-2, SCM_RIGHTS), then the body."""
    import _socket

    packed = b"".join(fd.to_bytes(4, sys.byteorder) for fd in fds)  # as ``socket.send_fds`` packs them
    conn.sendmsg([b"%08d" % len(body)], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, packed)])
    conn.sendall(body)


class Lines:
    """The server's answers, a line at a time (``socket.makefile`` without the ``socket`` module)."""

    def __init__(self, conn: _socket.socket) -> None:
        self._conn = conn
        self._buffer = b""

    def readline(self) -> bytes:
        """The next line with its newline; what is left when the server closed; OSError as ``recv`` raises it."""
        while b"\n" not in self._buffer:
            more = self._conn.recv(4096)
            if not more:
                line, self._buffer = self._buffer, b""
                return line
            self._buffer += more
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line + b"\n"


class DetachLost(OSError):
    """The server went away after it was told to fork: the process may or may not run."""


def fork_detached(root: str, argv: list[str], env: Mapping[str, str], cwd: str, fds: tuple[int, int, int],
                  timeout: float = 10.0) -> int | None:
    """Have the CLI server of the home at ``root`` fork ``argv`` (``swarm _teammate ARGS``) as a process of its
    own: in its own session, belonging to no launcher and to no connection. Its pid; None when no server of this
    installation answers or it refused (then nothing ran, and the caller starts the command itself); DetachLost
    when the server ended between being told and answering.
    """
    import _socket

    path = os.fsencode(run_file(root, CLI_SOCKET))
    if len(path) > 100 or not hasattr(_socket, "SO_PEERCRED"):
        return None
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.settimeout(timeout)
        try:
            conn.connect(path)
            send_request(conn, request_body(sys.prefix, package_dir(), os.fsencode(cwd), current_umask(), argv,
                                            ((os.fsencode(k), os.fsencode(v)) for k, v in env.items())), fds)
            reply = Lines(conn)
            if not reply.readline().startswith(b"P"):
                return None  # stale, another installation, or closed: nothing ran
            conn.sendall(DETACH)
        except (OSError, ValueError):
            return None  # before the answer: the server's child ends without running anything
        try:
            answer = reply.readline()
        except OSError as exc:
            raise DetachLost(f"the CLI server stopped answering: {exc}") from exc
        if answer.startswith(b"W") and answer[1:].strip().isdigit():
            return int(answer[1:])
        if answer.startswith(b"N"):
            return None
        raise DetachLost("the CLI server ended without saying whether it started the process")
    finally:
        conn.close()
