"""Teammates Claude Code's own lead started (no pid recorded): are they running, and in which pane.

Claude Code records a pane teammate's pane id (``%3``) but not its tmux
server: a lead inside tmux splits its own window (the user's server), a lead
outside tmux puts its teammates on a private server ``-L claude-swarm-<lead
pid>``, and every server numbers its panes from ``%0``. A pane id alone
therefore names nothing, and acting on it on swarm's default server can kill
the user's own pane. So such a teammate is judged by its process:

- Claude Code starts it as ``claude --agent-id <name>@<team> ...``
  (docs/protocol.md) and that command line stays as it was (2.1.332 renames
  only its ``comm`` and the pane's title). A process of this user with the
  member's agent id — and, when its environment can be read, this home as
  its config dir — is the teammate: it is ``alive``; with none, ``gone``.
- Its pane is the pane with the recorded id on a server the lead may have
  used (``claude-swarm-<lead pid>``, or every ``claude-swarm-*`` when the
  lead's pid is unknown, then the caller's own server) whose process is the
  teammate or one of its ancestors. Only such a proven pane is ever killed.

An in-process teammate lives inside its lead, so it is gone once the lead
provably is. The lead's process is the team file's lead pid (a swarm lead)
or the one in Claude Code's session record ``<config dir>/sessions/<pid>.json``
whose ``sessionId`` is the team's ``leadSessionId`` (its ``procStart``
rules out a reused pid; Claude Code removes the record when it exits). With
neither, the lead's state is ``unknown`` and the member's entry is believed.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import psutil

from swarm.backends.procs import is_pid_alive, kill_tree
from swarm.core.home import Home
from swarm.core.jsonfile import decode_json
from swarm.core.names import LEAD_NAME
from swarm.core.protocol import Member, TeamFile
from swarm.core.teams import TeamStore
from swarm.errors import BackendError, SwarmError

if TYPE_CHECKING:  # libtmux takes a while to import: only a pane search loads it
    from swarm.backends.tmux_client import Pane, TmuxClient

log = logging.getLogger(__name__)

Verdict = Literal["alive", "gone", "unknown"]
LEAD_SOCKET_PREFIX = "claude-swarm-"
"""A Claude Code lead outside tmux puts its teammates on the tmux server ``-L claude-swarm-<its pid>``."""
_AGENT_ID = re.compile(r"--agent-id[= ]['\"]?([^\s'\"]+)")


@dataclass(frozen=True)
class PaneAt:
    """A pane proven to hold a teammate: its server's socket, id and pid."""

    socket: str
    pane_id: str
    pid: int


@dataclass(frozen=True)
class Teammate:
    """A Claude Code teammate's process on this machine (the outermost one carrying its agent id)."""

    pid: int
    create_time: float
    pane: PaneAt | None


@dataclass
class ClaudeCodeSide:
    """What this machine shows of the Claude Code processes of one home (each scan once per instance)."""

    home: Home | None
    env: Mapping[str, str]
    _by_agent: dict[str, list[psutil.Process]] | None = field(default=None, repr=False)
    _teams: dict[str, TeamFile | None] = field(default_factory=dict, repr=False)

    # -- the teammate -------------------------------------------------------------

    def teammate(self, member: Member) -> Teammate | None:
        """The member's process (and its pane, when proven), or None when no such process runs."""
        procs = self._processes().get(member.agent_id, [])
        if not procs:
            return None
        outer = _outermost(procs)
        pane = self._pane(member, outer) if member.backend_type == "tmux" and member.tmux_pane_id else None
        return Teammate(pid=outer.pid, create_time=outer.create_time(), pane=pane)

    def stop(self, member: Member, grace: float) -> str:
        """SIGTERM then SIGKILL the member's process tree, then remove its pane if proven; say what was done.

        Nothing is signalled or removed that was not proven to be this
        teammate's: BackendError when no process of it is found (its pane id
        alone proves nothing) or when its process survives.
        """
        found = self.teammate(member)
        if found is None:
            raise BackendError(f"could not stop {member.name}: no process runs as {member.agent_id} on this machine, "
                               f"and its pane id {member.tmux_pane_id or '(none)'} alone does not say which pane is "
                               "its; if it still runs elsewhere, stop it there or close the pane yourself")
        root = found.pane.pid if found.pane is not None else found.pid
        kill_tree(root, grace, psutil.Process(root).create_time() if is_pid_alive(root) else None)
        if is_pid_alive(found.pid, found.create_time):
            raise BackendError(f"could not stop {member.name} (pid {found.pid}): it survived SIGKILL")
        if found.pane is None:
            return f"stopped pid {found.pid}; its pane {member.tmux_pane_id} was not found on a server swarm knows"
        self._client(found.pane.socket).kill("pane", found.pane.pane_id)
        return f"stopped pid {found.pid} and its pane {found.pane.pane_id} ({found.pane.socket})"

    def _processes(self) -> dict[str, list[psutil.Process]]:
        """Processes of this user that carry an ``--agent-id`` of this home, by agent id (scanned once)."""
        if self._by_agent is None:
            self._by_agent = {}
            uid = os.getuid()
            for proc in psutil.process_iter(["cmdline", "uids", "status"]):
                try:
                    if proc.info["uids"] is None or proc.info["uids"].real != uid \
                            or proc.info["status"] == psutil.STATUS_ZOMBIE:
                        continue
                    ids = _agent_ids(proc.info["cmdline"] or [])
                    if ids and self._of_this_home(proc):
                        for agent in ids:
                            self._by_agent.setdefault(agent, []).append(proc)
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
        return self._by_agent

    def _of_this_home(self, proc: psutil.Process) -> bool:
        """False only when the process's environment names another config dir than this home."""
        if self.home is None:
            return True
        try:
            env = proc.environ()
        except (psutil.NoSuchProcess, psutil.AccessDenied, OSError):
            return True
        config = env.get("CLAUDE_CONFIG_DIR") or (env["HOME"] + "/.claude" if env.get("HOME") else None)
        if config is None:
            return True
        return _same_dir(Path(config) / "teams", self.home.teams_dir)

    def _pane(self, member: Member, proc: psutil.Process) -> PaneAt | None:
        """The pane with the member's recorded id whose process is ``proc`` or one of its ancestors."""
        try:
            lineage = {proc.pid, *(parent.pid for parent in proc.parents())}
        except psutil.NoSuchProcess:
            return None
        for socket in self._servers(member):
            try:
                pane: Pane | None = self._client(socket).find(member.tmux_pane_id)
            except BackendError as exc:
                log.info("tmux server not readable", extra={"socket": socket, "reason": str(exc)})
                continue
            if pane is not None and pane.pid in lineage:
                return PaneAt(socket=socket, pane_id=pane.pane_id, pid=pane.pid)
        return None

    def _servers(self, member: Member) -> list[str]:
        """Sockets of the servers the member's pane may be on: its lead's first, then the caller's."""
        from swarm.backends.tmux_client import socket_path_for

        own = socket_path_for(member.tmux_socket, self.env)
        base = Path(socket_path_for("default", self.env)).parent  # the socket dir: TMUX_TMPDIR/tmux-<uid>
        lead = self._lead_pid(_team_of(member))
        names = [f"{LEAD_SOCKET_PREFIX}{lead}"] if lead is not None else \
            sorted(p.name for p in _entries(base) if p.name.startswith(LEAD_SOCKET_PREFIX))
        found = [str(base / name) for name in names if (base / name).exists()]
        return [*found, *([own] if own not in found else [])]

    def _client(self, socket: str) -> TmuxClient:
        from swarm.backends.tmux_client import TmuxClient

        binary = shutil.which("tmux", path=self.env.get("PATH", os.defpath))
        if binary is None:
            raise BackendError("tmux is not installed or not on PATH")
        return TmuxClient(socket, binary)

    # -- the lead -----------------------------------------------------------------

    def lead_state(self, team_name: str) -> Verdict:
        """Whether the team's lead process runs (``unknown`` when swarm cannot tell)."""
        team = self._team(team_name)
        if team is None:
            return "unknown"
        lead = team.member(LEAD_NAME)
        if lead is not None and lead.pid is not None:
            return "alive" if is_pid_alive(lead.pid, lead.proc_start) else "gone"
        record = self._session_record(team)
        if record is None:
            return "unknown"
        pid, started = record
        if not is_pid_alive(pid) or (started is not None and _proc_start(pid) not in (None, started)):
            return "gone"
        return "alive"

    def _lead_pid(self, team_name: str) -> int | None:
        team = self._team(team_name)
        if team is None:
            return None
        lead = team.member(LEAD_NAME)
        if lead is not None and lead.pid is not None:
            return lead.pid
        record = self._session_record(team)
        return record[0] if record is not None else None

    def _session_record(self, team: TeamFile) -> tuple[int, str | None] | None:
        """Pid and ``procStart`` of Claude Code's session record for the team's lead session, if any."""
        if self.home is None or not team.lead_session_id:
            return None
        for path in sorted(_entries(self.home.root / "sessions")):
            if path.suffix != ".json":
                continue
            try:
                doc = decode_json(path.read_bytes())
            except (OSError, ValueError):
                continue
            if isinstance(doc, dict) and doc.get("sessionId") == team.lead_session_id \
                    and isinstance(doc.get("pid"), int) and not isinstance(doc.get("pid"), bool):
                started = doc.get("procStart")
                return doc["pid"], started if isinstance(started, str) else None
        return None

    def _team(self, name: str) -> TeamFile | None:
        if name not in self._teams:
            try:
                self._teams[name] = TeamStore(self.home).get(name) if self.home is not None else None
            except SwarmError:
                self._teams[name] = None
        return self._teams[name]


def _agent_ids(cmdline: list[str]) -> set[str]:
    """Agent ids a command line names: ``--agent-id X``, ``--agent-id=X``, or inside a shell's ``-c`` string."""
    found = set()
    for index, arg in enumerate(cmdline):
        if arg == "--agent-id" and index + 1 < len(cmdline):
            found.add(cmdline[index + 1])
        else:
            found.update(_AGENT_ID.findall(arg))
    return found


def _outermost(procs: list[psutil.Process]) -> psutil.Process:
    """The one of ``procs`` none of the others is an ancestor of (a shell wrapper, else the teammate)."""
    pids = {p.pid for p in procs}
    for proc in procs:
        try:
            if not any(parent.pid in pids for parent in proc.parents()):
                return proc
        except psutil.NoSuchProcess:
            continue
    return procs[0]


def _team_of(member: Member) -> str:
    return member.agent_id.rpartition("@")[2]


def _entries(directory: Path) -> list[Path]:
    try:
        return list(directory.iterdir())
    except OSError:
        return []


def _same_dir(first: Path, second: Path) -> bool:
    try:
        return os.path.samefile(first, second)
    except OSError:
        return os.path.realpath(first) == os.path.realpath(second)


def _proc_start(pid: int) -> str | None:
    """Field 22 of ``/proc/<pid>/stat`` (start time in clock ticks), as Claude Code records it; None off Linux."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split(" ")
    return fields[19] if len(fields) > 19 else None
