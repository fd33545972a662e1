"""One tmux server, spoken to through libtmux: the error boundary of the tmux backend.

``TmuxClient`` names its server by socket path (``socket_path_for`` resolves
``-S``/``-L``/``$TMUX`` from the caller's environment, never this process's)
and is the one place where libtmux exceptions and non-zero exits become
``BackendError`` (``TmuxCommandFailed`` when tmux itself answered with an
error; ``target_gone`` when what it was asked about no longer exists).
Arguments pass through ``escape_arg`` (tmux splits its command line at a
trailing ``;``); text tmux format-expands passes through ``escape_format``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import stat
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from libtmux import exc as tmux_exc
from libtmux.server import Server

from swarm.errors import BackendError

log = logging.getLogger(__name__)

TMUX_MISSING = "tmux is not installed or not on PATH; use --backend subprocess"
TEAM_OPTION = "@swarm_team"
"""The pane option that names the team a pane belongs to."""
_GONE_MARKERS = (
    "can't find pane",
    "can't find session",
    "can't find window",
    "no such pane",  # set-option -p on a pane that exited a moment ago
    "no such session",
    "no such window",
    "no server running",
    "error connecting to",
    "server exited unexpectedly",
    "no current target",  # the server is up but its last session just went
)
PANE_FORMAT = " ".join(
    [
        "#{pane_id}",
        "#{pane_pid}",
        "#{window_id}",
        "#{pane_index}",
        "#{pane_dead}",
        "#{" + TEAM_OPTION + "}",
        "#{session_name}",  # last: the caller's session name may hold spaces
    ]
)
_SEPARATOR = ";"


class TmuxCommandFailed(BackendError):
    """tmux ran and answered with an error."""

    def __init__(self, command: str, stderr: Sequence[str]) -> None:
        self.stderr = "\n".join(stderr).strip()
        first = self.stderr.splitlines()[0] if self.stderr else "no message"
        super().__init__(f"tmux {command} failed: {first}")

    @property
    def target_gone(self) -> bool:
        """The pane, session or the whole server no longer exists."""
        return any(marker in self.stderr for marker in _GONE_MARKERS)


@dataclass(frozen=True)
class Pane:
    """One row of ``list-panes -a``."""

    pane_id: str
    pid: int
    window_id: str
    index: int
    dead: bool
    team: str
    session: str

    @classmethod
    def parse(cls, line: str) -> Pane:
        pane_id, pid, window_id, index, dead, team, session = line.split(" ", 6)
        return cls(pane_id, int(pid), window_id, int(index), dead == "1", team, session)


def escape_arg(arg: str) -> str:
    """Protect an argument from tmux's ``;`` command splitting."""
    return arg[:-1] + "\\;" if arg.endswith(";") else arg


def escape_format(text: str) -> str:
    """Protect text that tmux format-expands (``#(...)`` would run a command)."""
    return text.replace("#", "##")


def socket_path_for(socket: str | None, env: Mapping[str, str]) -> str:
    """The socket file tmux would use for ``-S path``, ``-L name`` or the default.

    Resolved here, from ``env``, so every tmux call names its server with
    ``-S`` and nothing depends on the environment of this Python process.
    """
    if socket and "/" in socket:
        return str(Path(socket).expanduser().absolute())
    if not socket and env.get("TMUX"):
        try:
            return str(Server.from_env(env).socket_path)
        except tmux_exc.LibTmuxException:  # a malformed $TMUX: use the default server
            log.warning("ignored malformed TMUX variable", extra={"tmux": env.get("TMUX")})
    base = Path(env.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.geteuid()}"
    return str(base / (socket or "default"))


class TmuxClient:
    """One tmux server, addressed by socket path; the error boundary."""

    def __init__(self, socket_path: str, binary: str) -> None:
        self.socket_path = socket_path
        # tmux makes its socket directory itself only for -L; with -S it must exist
        Path(socket_path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._server = Server(socket_path=socket_path, tmux_bin=binary)

    def run(self, command: str, *args: str) -> list[str]:
        return self._call([command, *[escape_arg(arg) for arg in args]])

    def run_chain(self, commands: Sequence[Sequence[str]]) -> list[str]:
        """Several commands in one client call, separated by a bare ``;``."""
        argv: list[str] = []
        for command in commands:
            argv += [*([_SEPARATOR] if argv else []), command[0], *map(escape_arg, command[1:])]
        return self._call(argv)

    def _call(self, argv: list[str]) -> list[str]:
        try:
            result = self._server.cmd(*argv)
        except tmux_exc.TmuxCommandNotFound as exc:
            raise BackendError(TMUX_MISSING) from exc
        except (tmux_exc.LibTmuxException, OSError) as exc:
            raise BackendError(f"tmux {argv[0]} failed: {exc}") from exc
        if result.returncode != 0:
            raise TmuxCommandFailed(argv[0], result.stderr)
        return list(result.stdout)

    def panes(self) -> list[Pane]:
        """Every pane on the server; none when the server is not running."""
        try:
            lines = self.run("list-panes", "-a", "-F", PANE_FORMAT)
        except TmuxCommandFailed as exc:
            if exc.target_gone:
                return []
            raise
        return [Pane.parse(line) for line in lines if line]

    def find(self, pane_id: str) -> Pane | None:
        return next((pane for pane in self.panes() if pane.pane_id == pane_id), None)

    def has_session(self, name: str) -> bool:
        try:
            self.run("has-session", "-t", f"={name}")
        except TmuxCommandFailed as exc:
            if exc.target_gone:
                return False
            raise
        return True

    def kill(self, kind: str, target: str) -> None:
        """``kill-pane`` / ``kill-session``; a target already gone is fine."""
        try:
            self.run(f"kill-{kind}", "-t", target)
        except TmuxCommandFailed as exc:
            if not exc.target_gone:
                raise



def remove_dead_socket(path: str, wait: float = 2.0) -> None:
    """Unlink the socket file at ``path`` once it is a socket nothing listens on (up to ``wait`` s).

    A server that is still exiting answers for a moment; one that keeps
    answering is in use, and its socket is kept.
    """
    deadline = time.monotonic() + wait
    while _listening(path) and time.monotonic() < deadline:
        time.sleep(0.02)
    with contextlib.suppress(OSError):
        if stat.S_ISSOCK(os.lstat(path).st_mode) and not _listening(path):
            os.unlink(path)
            log.info("removed stale tmux socket", extra={"socket": path})


def _listening(path: str) -> bool:
    """A server accepts connections on the socket file ``path``."""
    with socket.socket(socket.AF_UNIX) as probe:
        try:
            probe.connect(path)
        except OSError:
            return False
    return True
