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

Errors: every tmux call goes through ``tmux_client.TmuxClient``, the one place where
libtmux exceptions and non-zero exits become ``BackendError``
(``TmuxCommandFailed`` when tmux itself answered with an error).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from swarm.backends.base import Handle, LaunchSpec
from swarm.backends.procs import (
    check_cwd,
    is_pid_alive,
    kill_tree,
    launch_env,
    process_create_time,
    resolve_program,
)
from swarm.backends.tmux_client import (
    PANE_FORMAT,
    TEAM_OPTION,
    TMUX_MISSING,
    Pane,
    TmuxClient,
    TmuxCommandFailed,
    escape_format,
    remove_dead_socket,
    socket_path_for,
)
from swarm.core.names import agent_id
from swarm.errors import BackendError

log = logging.getLogger(__name__)

NAME = "tmux"
SESSION_PREFIX = "swarm-"
MEMBER_OPTION = "@swarm_name"
DETACHED_SIZE = ("200", "50")
"""Columns and rows of a new detached team session (it resizes on attach)."""

_NOT_INHERITED = ("TERM",)
"""tmux sets TERM for its panes; the caller's value would be wrong there."""
_COLOR = re.compile(r"(#[0-9A-Fa-f]{6}|[A-Za-z]+[0-9]{0,3})")


def session_name(team: str) -> str:
    return f"{SESSION_PREFIX}{team}"



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
        flags = ["-d", "-P", "-F", PANE_FORMAT, "-c", escape_format(str(self.cwd))]
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
        self._tmux = TmuxClient(socket_path_for(socket, self._env), binary)

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
            pane = self._split(caller.pane_id, caller.window_id, launch)
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

    def _split(self, pane: str, window: str, launch: _Launch) -> Pane:
        """A new pane split from target ``pane``; a full ``window`` is retiled first."""
        try:
            lines = self._tmux.run("split-window", "-t", pane, *launch.tail())
        except TmuxCommandFailed as exc:
            if "no space for new pane" not in exc.stderr:
                raise
            self._tmux.run("select-layout", "-t", window, "tiled")
            lines = self._tmux.run("split-window", "-t", pane, *launch.tail())
        return Pane.parse(lines[0])

    def _spawn_in_team_session(self, team: str, launch: _Launch) -> Pane:
        """A pane in the team's session: split from its current window, or the session made for it.

        One tmux call when the session exists (the usual case from the second
        teammate on); asking first whether it exists would be two more.
        """
        name = session_name(team)
        current = f"={name}:"  # exactly this session, its current window (and that window's active pane)
        try:
            return self._split(current, current, launch)
        except TmuxCommandFailed as exc:
            if not exc.target_gone:
                raise
        created = self._new_session(name, launch)
        if created is not None:
            return created
        try:  # another spawn made the session in the meantime
            return self._split(current, current, launch)
        except TmuxCommandFailed as exc:
            if not exc.target_gone:
                raise
            raise BackendError(f"tmux session {name} vanished while a teammate was starting; try again") from exc

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

    def _server_for(self, handle: Handle) -> TmuxClient:
        """The server a handle names: a socket path, or a socket name as ``-L`` takes it (never a relative path)."""
        socket = handle.extra.get("socket")
        path = socket_path_for(socket, self._env) if socket else self._tmux.socket_path
        if path == self._tmux.socket_path:
            return self._tmux
        return TmuxClient(path, self._binary)

    def _own_pane(self, tmux: TmuxClient, handle: Handle) -> Pane | None:
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
