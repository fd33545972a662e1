"""The ``swarm`` executable: a served command goes to the home's CLI server, everything else runs here.

A fresh ``swarm send`` spends ~150 ms importing click, pydantic and
cryptography for ~5 ms of work. When the home's CLI server
(``swarm.cli.forkserver``) answers, this process imports none of that: it
passes its argv, working directory, umask, environment and fds 0-2 to the
server, whose forked child runs the command exactly as this process would,
and exits with the child's status. Ctrl-C, SIGTERM and SIGHUP reach the
child's process group as they would reach a local command.

Only ``SERVED`` commands, given as the first argument (no global option
before them), go to the server, and ``TEAMMATE`` (``swarm _teammate ARGS``,
what a backend starts for a teammate: this process is then the launcher of a
teammate forked from the server, ``swarm.teammate.served``, and stays until
it ends); ``SWARM_CLI_SERVER=0`` turns it off. With no
server, or one that is stale or from another installation, the command runs
here (and a missing server is started for the next call), so a served
command never behaves differently, only sooner.

Exactly once: the server's child runs only after this process has seen it
start and answered "go"; until then nothing has run and running here is
safe. After "go", the answer is the child's status, or one line and exit 1
if the child ended without one.

Wire format (unix stream socket): 8 ASCII digits, the body's length, sent
with fds 0-2 (SCM_RIGHTS); the body, NUL-separated fields ``MAGIC``,
``sys.prefix`` (the venv), the swarm package directory, cwd, umask (octal),
argc, argv..., ``KEY=value``... The server answers ``S`` (stale, or another
installation or ``PYTHONPATH``: nothing ran)
or ``P<pid>``; the client answers ``G``; the server ends with ``X<status>``.
A backend starting a subprocess teammate answers ``D`` instead
(``swarm.core.rendezvous.fork_detached``): the teammate is forked loose and
answers ``W<pid>`` itself (``N``: not a teammate's command, nothing ran).
"""

from __future__ import annotations

import os
import sys

from swarm.core.rendezvous import (  # not Home: no pathlib
    CLI_LOCK,
    CLI_SOCKET,
    GO,
    SWITCH,
    Lines,
    current_umask,
    home_root,
    package_dir,
    request_body,
    run_file,
    send_request,
)
from swarm.teammate import TEAMMATE

TYPE_CHECKING = False  # not ``typing.TYPE_CHECKING``: importing typing costs this path ~4 ms
if TYPE_CHECKING:
    import _socket
    from collections.abc import Mapping
    from pathlib import Path
    from typing import NoReturn

SERVED = frozenset({"send", "inbox", "status", "tasks", "task", "permissions", "approve", "deny"})
"""Short, non-interactive commands that start no process of their own; the rest always run here."""
HEADLESS = "SWARM_CLI_SERVER_HEADLESS"
"""``1`` in the environment of a headless run (``run -p``, ``up --headless``), which its teammates inherit:
a CLI server such a run starts ends seconds after its last child, as one started with ``CI`` set does."""
START_TIMEOUT = 10.0
"""Seconds to wait for the server's child to start; past that nothing has run and the command runs here."""
FORWARDED_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT")


def main() -> None:
    args = sys.argv[1:]
    teammate = bool(args) and args[0] == TEAMMATE
    if args and (teammate or args[0] in SERVED) and os.environ.get(SWITCH, "1") != "0":
        try:
            status = _served(teammate)
        except KeyboardInterrupt:  # before the child was told to go: nothing ran
            os.write(2, b"swarm: error: interrupted\n")
            status = 130
        if status is not None:
            exit_now(status)
    if teammate:
        _teammate_here(args[1:])
    from swarm.cli.main import main as run_here

    run_here()


def exit_now(status: int) -> NoReturn:
    """Flush the standard streams and end this process with ``status``, skipping the interpreter's teardown
    (~1.5 ms of a ~20 ms served send: modules, objects, the collector): for a served command's client, which
    wrote only through fds and registered nothing to run at exit, and for a server's forked children."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(status)


def _teammate_here(args: list[str]) -> None:
    """Be the teammate: no server answered (or it is off), so this process imports and runs it."""
    from swarm.startup import hold_collector

    hold_collector()  # as ``python -m swarm.teammate`` does: start-up objects are kept for good
    from swarm.teammate.__main__ import main as teammate

    sys.exit(teammate(args))


def _served(teammate: bool = False) -> int | None:
    """The served command's exit status, or None when it must run here (nothing ran elsewhere)."""
    import _socket  # not ``socket``: its Python layer (and ``selectors``) costs this path ~2 ms

    root = home_root(os.environ)
    path = os.fsencode(run_file(root, CLI_SOCKET))
    if len(path) > 100 or not hasattr(_socket, "SO_PEERCRED"):
        return None  # a unix socket path is limited to ~107 bytes; peer checks are Linux's
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.settimeout(START_TIMEOUT)
        try:
            conn.connect(path)
        except OSError:
            server = _start_server(root)
            if not teammate or server is None or not _await_server(conn, path, server, run_file(root, CLI_LOCK)):
                return None
        body = request_body(sys.prefix, package_dir(), os.getcwdb(), current_umask(), sys.argv, os.environb.items())
        try:
            send_request(conn, body, (0, 1, 2))
            reply = Lines(conn)
            started = reply.readline()
            if not started.startswith(b"P"):
                return None  # "S" (stale, another installation) or closed: nothing ran
            _forward_signals(int(started[1:]))
            conn.settimeout(None)
            conn.sendall(GO)
        except (OSError, ValueError):
            return None  # before "go": the child, if any, ends without running
        return _status(reply, teammate)
    finally:
        conn.close()


def _await_server(conn: _socket.socket, path: bytes, server: int, lock: str) -> bool:
    """Connect ``conn`` once the server just started (pid ``server``) listens: True, or False if it is gone.

    For a teammate, whose ~0.3 s of imports a burst of teammates would each
    repeat while the server starts: waiting for it costs the first one about
    the same and spares the rest. It listens before it imports; one that
    found another server holding the home's lock exits, and that one is waited for.
    """
    import time

    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        try:
            conn.connect(path)
            return True
        except OSError:
            pass
        if not (_alive(server) or _alive(server_pid(lock))):
            return False
        time.sleep(0.005)
    return False


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def headless(env: Mapping[str, str]) -> bool:
    """Whether ``env`` is a headless or CI run's: a CLI server it starts must not outlive the run by minutes
    (whatever waits for every descendant, a CI runner or ``timeout``, would wait for it)."""
    return env.get(HEADLESS) == "1" or env.get("CI", "").lower() not in ("", "0", "false", "no")


def server_pid(lock: str | Path) -> int | None:
    """The pid a CLI server wrote into the home's lock file (``Home.cli_lock_path``): it may be gone since."""
    try:
        with open(lock, "rb") as held:
            return int(held.read().strip() or 0) or None
    except (OSError, ValueError):
        return None


def _status(reply: Lines, teammate: bool) -> int:
    try:
        line = reply.readline()
    except OSError:
        line = b""
    if line.startswith(b"X"):
        return int(line[1:])
    os.write(2, b"swarm: error: the teammate's process was killed; `swarm status` shows the team\n" if teammate else
                b"swarm: error: the command's process ended without an exit status (killed?); "
                b"check the result, e.g. `swarm inbox`\n")
    return 1


def _forward_signals(pid: int) -> None:
    import _signal  # the C module: ``signal`` builds its enums on import, ~0.5 ms of this path

    def forward(signum: int, frame: object) -> None:
        try:
            os.killpg(pid, signum)
        except OSError:
            pass

    for name in FORWARDED_SIGNALS:
        _signal.signal(getattr(_signal, name), forward)


def _start_server(root: str) -> int | None:
    """Start the home's CLI server; its pid, or None if it could not be started. One that finds a live
    server exits at once.

    Detached twice over: in a session of its own, and no descendant of this
    process (a short-lived child starts it, reports its pid and exits), so
    stopping a teammate's launcher, which stops its descendants, never stops the server.
    """
    if not os.path.isdir(root):
        return None  # no home yet (or a typo): a server would make one
    from swarm.runtime.env import without_caller

    env = without_caller(os.environ)  # it serves every caller: none's token or team
    argv = [sys.executable, "-P", "-m", "swarm.cli.forkserver", os.fspath(root)]
    null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    read_end, write_end = os.pipe()
    try:
        child = os.fork()
        if child == 0:
            try:
                os.close(read_end)
                pid = os.posix_spawn(sys.executable, argv, env, setsid=True,
                                     file_actions=[(os.POSIX_SPAWN_DUP2, null, fd) for fd in (0, 1, 2)])
                os.write(write_end, b"%d" % pid)
            finally:
                os._exit(0)
        os.close(write_end)
        write_end = -1
        os.waitpid(child, 0)
        with os.fdopen(read_end, "rb") as answer:
            read_end = -1
            return int(answer.read() or 0) or None
    except (OSError, ValueError):
        return None  # no server: every call runs here, as before
    finally:
        for fd in (null, read_end, write_end):
            if fd >= 0:
                os.close(fd)


if __name__ == "__main__":
    main()
