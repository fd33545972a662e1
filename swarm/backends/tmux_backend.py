"""Teammates in tmux panes, on the caller's window or in a team session.

Placement: a caller inside tmux on the same server (``TMUX`` and
``TMUX_PANE`` set) gets its window split, re-laid out ``main-vertical`` with
its own pane as the main one (``tiled`` when it is not the window's first
pane). Otherwise each team has one detached session ``swarm-<team>``: the
first teammate creates it, later ones split its window and it is re-tiled.

The pane runs the teammate's argument list directly — never a shell string,
never ``send-keys``. Three tmux facts shape how arguments are passed:

- with two or more arguments after ``--`` tmux ``execvp``s them; with exactly
  one it runs ``$SHELL -c <arg>``, so a lone program is prefixed with
  ``env --`` (which then ``exec``s it, keeping the pane pid);
- tmux splits its own command line at any argument *ending* in ``;`` (the
  ``;`` is stripped) and turns a trailing ``\\;`` into ``;``, so every
  argument ending in ``;`` gets a backslash before that ``;``;
- ``-c`` (start directory) and ``select-pane -T`` are format-expanded
  (``#(cmd)`` runs a shell command), so ``#`` is doubled there.

The environment goes in as ``-e NAME=VALUE`` flags: the tmux server's
environment is not the caller's. ``new-session -e`` also sets the *session*
environment, so those variables are unset from the session right after, lest
later teammates inherit the first one's.

Errors: every tmux call goes through ``_Tmux.run``, the one place where
libtmux exceptions and non-zero exits become ``BackendError``
(``TmuxCommandFailed`` when tmux itself answered with an error).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import socket
import stat
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from libtmux import exc as tmux_exc
from libtmux.server import Server

from swarm.backends.base import Handle, LaunchSpec
from swarm.backends.procs import (
    check_cwd,
    is_pid_alive,
    kill_tree,
    launch_env,
    process_create_time,
    resolve_program,
)
from swarm.core.names import agent_id
from swarm.errors import BackendError

log = logging.getLogger(__name__)

NAME = "tmux"
TMUX_MISSING = "tmux is not installed or not on PATH; use --backend subprocess"
SESSION_PREFIX = "swarm-"
TEAM_OPTION = "@swarm_team"
MEMBER_OPTION = "@swarm_name"
DETACHED_SIZE = ("200", "50")
"""Columns and rows of a new detached team session (it resizes on attach)."""

_NOT_INHERITED = ("TERM",)
"""tmux sets TERM for its panes; the caller's value would be wrong there."""
_GONE_MARKERS = (
    "can't find pane",
    "can't find session",
    "can't find window",
    "no server running",
    "error connecting to",
    "server exited unexpectedly",
    "no current target",  # the server is up but its last session just went
)
_COLOR = re.compile(r"(#[0-9A-Fa-f]{6}|[A-Za-z]+[0-9]{0,3})")
_PANE_FORMAT = " ".join(
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


def session_name(team: str) -> str:
    return f"{SESSION_PREFIX}{team}"


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


class _Tmux:
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
            lines = self.run("list-panes", "-a", "-F", _PANE_FORMAT)
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


def launch_argv(spec: LaunchSpec, env: Mapping[str, str], cwd: Path) -> list[str]:
    """The argument list for the pane: program resolved, never a lone argument."""
    program = resolve_program(spec.argv[0], path=env.get("PATH"), cwd=cwd)
    argv = [program, *spec.argv[1:]]
    if len(argv) > 1:
        return argv
    if "=" in program:  # env would read it as NAME=VALUE
        raise BackendError(f"cannot start {program!r} in tmux: its path contains '='")
    wrapper = shutil.which("env", path=env.get("PATH")) or "/usr/bin/env"
    return [wrapper, "--", program]


@dataclass(frozen=True)
class _Launch:
    """What a new pane runs: argv, ``-e`` environment and start directory."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path

    @classmethod
    def from_spec(cls, spec: LaunchSpec, inherited: Mapping[str, str]) -> _Launch:
        if not spec.argv:
            raise BackendError(f"cannot start {spec.name}: the command is empty")
        env = launch_env(inherited, spec.env, exclude=_NOT_INHERITED)
        cwd = check_cwd(spec.cwd)
        return cls(launch_argv(spec, env, cwd), env, cwd)

    def tail(self) -> list[str]:
        """Detached, print the pane, directory, ``-e`` flags, then ``-- argv``."""
        flags = ["-d", "-P", "-F", _PANE_FORMAT, "-c", escape_format(str(self.cwd))]
        for key, value in self.env.items():
            flags += ["-e", f"{key}={value}"]
        return [*flags, "--", *self.argv]


class TmuxBackend:
    """Start teammates in tmux panes; see the module docstring for placement."""

    def __init__(self, socket: str | None = None, env: Mapping[str, str] | None = None) -> None:
        self._env: dict[str, str] = dict(os.environ if env is None else env)
        binary = shutil.which("tmux", path=self._env.get("PATH", os.defpath))
        if binary is None:
            raise BackendError(TMUX_MISSING)
        self._binary = binary
        self._tmux = _Tmux(socket_path_for(socket, self._env), binary)

    @property
    def name(self) -> str:
        return NAME

    @property
    def socket_path(self) -> str:
        return self._tmux.socket_path

    # -- start ----------------------------------------------------------------

    def start(self, spec: LaunchSpec) -> Handle:
        launch = _Launch.from_spec(spec, self._env)
        caller = self._caller_pane()
        if caller is not None:
            pane = self._split(caller, launch)
        else:
            pane = self._spawn_in_team_session(spec.team, launch)
        self._finish(pane, spec, launch, caller)
        log.info(
            "started tmux pane",
            extra={
                "team": spec.team,
                "agent_id": agent_id(spec.name, spec.team),
                "pane_id": pane.pane_id,
                "pid": pane.pid,
            },
        )
        extra = {"socket": self._tmux.socket_path, "session": pane.session}
        return Handle(backend=NAME, pid=pane.pid, pane_id=pane.pane_id, create_time=process_create_time(pane.pid),
                      extra=extra)

    def _caller_pane(self) -> Pane | None:
        """The caller's pane if it runs inside tmux on this very server."""
        pane_id = self._env.get("TMUX_PANE")
        if not pane_id or not self._env.get("TMUX"):
            return None
        theirs = os.path.realpath(socket_path_for(None, self._env))
        if theirs != os.path.realpath(self._tmux.socket_path):
            return None
        pane = self._tmux.find(pane_id)
        return pane

    def _split(self, target: Pane, launch: _Launch) -> Pane:
        try:
            lines = self._tmux.run("split-window", "-t", target.pane_id, *launch.tail())
        except TmuxCommandFailed as exc:
            if "no space for new pane" not in exc.stderr:
                raise
            self._tmux.run("select-layout", "-t", target.window_id, "tiled")
            lines = self._tmux.run("split-window", "-t", target.pane_id, *launch.tail())
        return Pane.parse(lines[0])

    def _spawn_in_team_session(self, team: str, launch: _Launch) -> Pane:
        name = session_name(team)
        if not self._tmux.has_session(name):
            created = self._new_session(name, launch)
            if created is not None:
                return created
        anchor = next((pane for pane in self._tmux.panes() if pane.session == name), None)
        if anchor is None:
            raise BackendError(f"tmux session {name} vanished while a teammate was starting; try again")
        return self._split(anchor, launch)

    def _new_session(self, name: str, launch: _Launch) -> Pane | None:
        """Create the team session with the teammate as its first pane.

        None when another process created the session meanwhile.
        """
        x, y = DETACHED_SIZE
        try:
            lines = self._tmux.run("new-session", "-s", name, "-x", x, "-y", y, *launch.tail())
        except TmuxCommandFailed as exc:
            if "duplicate session" in exc.stderr:
                return None
            raise
        if not lines:
            raise BackendError(f"tmux new-session printed no pane for {name}; is the server at {self._tmux.socket_path} usable?")
        return Pane.parse(lines[0])

    def _finish(self, pane: Pane, spec: LaunchSpec, launch: _Launch, caller: Pane | None) -> None:
        """Session env, title, colour, tags and layout; on failure the pane is removed."""
        try:
            commands = self._decorations(pane, spec, caller)
            if caller is None:
                # new-session -e also set these on the session; later panes must not inherit them
                commands += [["set-environment", "-t", f"={pane.session}", "-u", key] for key in launch.env]
            self._tmux.run_chain(commands)
        except BackendError as exc:
            with contextlib.suppress(BackendError):  # keep the original error, not the cleanup's
                self._remove(pane.pane_id, pane.pid, grace=0.5)
            if isinstance(exc, TmuxCommandFailed) and exc.target_gone:
                raise BackendError(
                    f"{spec.name} exited right after it started in tmux; "
                    f"run it with --backend subprocess to see its output in {spec.log_path}"
                ) from exc
            raise

    def _decorations(self, pane: Pane, spec: LaunchSpec, caller: Pane | None) -> list[list[str]]:
        target = pane.pane_id
        commands = [
            ["set-option", "-p", "-t", target, "remain-on-exit", "off"],
            ["set-option", "-p", "-t", target, TEAM_OPTION, spec.team],
            ["set-option", "-p", "-t", target, MEMBER_OPTION, spec.name],
            ["select-pane", "-t", target, "-T", escape_format(spec.name)],
            ["set-option", "-w", "-t", pane.window_id, "pane-border-status", "top"],
        ]
        commands += _border_commands(target, spec.color)
        commands.append(["select-layout", "-t", pane.window_id, self._layout(pane, caller)])
        return commands

    def _layout(self, pane: Pane, caller: Pane | None) -> str:
        if caller is None:
            return "tiled"
        first = min(p.index for p in self._tmux.panes() if p.window_id == caller.window_id)
        return "main-vertical" if caller.index == first else "tiled"

    # -- liveness and stop ------------------------------------------------------

    def _server_for(self, handle: Handle) -> _Tmux:
        socket = handle.extra.get("socket")
        if not socket or socket == self._tmux.socket_path:
            return self._tmux
        return _Tmux(socket, self._binary)

    def _own_pane(self, tmux: _Tmux, handle: Handle) -> Pane | None:
        """The handle's pane, unless that pane id now belongs to another process."""
        if not handle.pane_id:
            return None
        pane = tmux.find(handle.pane_id)
        if pane is None or (handle.pid is not None and pane.pid != handle.pid):
            return None
        return pane

    def is_alive(self, handle: Handle) -> bool:
        pane = self._own_pane(self._server_for(handle), handle)
        return pane is not None and not pane.dead and is_pid_alive(pane.pid, handle.create_time)

    def stop(self, handle: Handle, grace: float = 3.0) -> None:
        """Kill the process tree by pid first (it is local; no tmux needed), then remove the pane."""
        if handle.pid is not None:
            kill_tree(handle.pid, grace, handle.create_time)
        tmux = self._server_for(handle)
        pane = self._own_pane(tmux, handle)
        if pane is not None:
            tmux.kill("pane", pane.pane_id)
        log.info("stopped tmux pane", extra={"pane_id": handle.pane_id, "pid": handle.pid})

    def _remove(self, pane_id: str, pid: int, grace: float) -> None:
        kill_tree(pid, grace, process_create_time(pid))  # the pane's own pid, read just now from tmux
        self._tmux.kill("pane", pane_id)

    def describe(self, handle: Handle) -> str:
        return f"tmux pane {handle.pane_id} (pid {handle.pid})"

    # -- helpers for cleanup and tests -----------------------------------------

    def list_panes(self, team: str) -> list[str]:
        """Ids of the live panes this backend started for ``team``, on any window."""
        return [pane.pane_id for pane in self._tmux.panes() if pane.team == team]

    def kill_server(self) -> None:
        """Stop this backend's tmux server and remove its socket file (tmux leaves it behind).

        Only for a private server swarm made: every pane on it goes. The
        socket is removed only when no server answers on it any more.
        """
        try:
            self._tmux.run("kill-server")
        except TmuxCommandFailed as exc:
            if not exc.target_gone:
                raise
        remove_dead_socket(self._tmux.socket_path)

    def kill_session(self, team: str, grace: float = 1.0) -> None:
        """Stop every pane of ``team`` (process trees included), then its session."""
        for pane in [p for p in self._tmux.panes() if p.team == team]:
            self._remove(pane.pane_id, pane.pid, grace)
        self._tmux.kill("session", f"={session_name(team)}")


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


def _border_commands(target: str, color: str | None) -> list[list[str]]:
    if not color:
        return []
    if not _COLOR.fullmatch(color):
        log.warning("ignored invalid pane colour", extra={"pane_id": target, "color": color})
        return []
    return [
        ["set-option", "-p", "-t", target, style, f"fg={color}"]
        for style in ("pane-border-style", "pane-active-border-style")
    ]
