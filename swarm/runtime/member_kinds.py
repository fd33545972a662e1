"""One class per kind of member: is it running, what is its state, how is it stopped, which frames count.

``member_kind(member, machine)`` is the one dispatch, on ``Member.kind`` (core: the
kind from the entry alone, and what needs no process — ``present``, ``idle``,
whether its frames count without swarm's marker). Each class answers from the
entry and from what this machine shows of its processes (``Machine``):

- ``SwarmTeammate``: swarm's own. Running while ``isActive`` and its recorded pid
  runs; stopped by pid and token (below) and its pane removed.
- ``ClaudeCodePane``: a Claude Code CLI swarm started in a pane. Claude Code owns
  ``isActive`` (busy, not alive), so it runs while its recorded pid runs — the
  pane's own process, judged as swarm's own are, never through the pane's
  server; stopped as swarm's own are.
- ``LeadsPaneTeammate``: a pane teammate Claude Code's own lead started (no pid
  recorded). Running while a process with its agent id runs; stopped only as far
  as ``claude_members`` proves that process and pane its own.
- ``InProcessTeammate``: lives inside its Claude Code lead. Running while its
  entry says so, unless the lead is provably gone; nothing of its own to signal.
- ``TeamLead``: shown as ``lead``; not stopped by swarm.
- ``RemoteTeammate``: swarm's own teammate on another host (``Member.host``): judged by its entry, its host
  (``runtime.hosts``) watches its process.

swarm's own processes: a member entry records the teammate's pid with its create
time (``proc_start``) and a token (``proc_token``) that every process it started
carries in its environment; a teammate forked from the CLI server also its
worker's (``worker_pid``: ``swarm.teammate.served``), stopped with its launcher.
Both checks go through ``swarm.backends.procs``: ``is_pid_alive`` (a reused pid
is not the teammate) and ``kill_tree`` (the teammate, its descendants, and every
process carrying its token — also after the teammate itself was SIGKILLed and
its children were reparented away). Stopping works without the backend: the
processes are local, so a member in a tmux pane is stopped by pid and token
even when tmux is missing from PATH; the pane is then removed if tmux can be
reached (it also closes by itself when its process ends).

Deaths (``reap_dead``): a teammate whose recorded process vanished (crash,
``kill -9``, pane closed) is marked dead, the lead told once, and every process
carrying its token reaped. Only members found dead are scanned, so the common
case (nobody died) reads the team file and nothing else. A dead teammate's
worktree is kept as it is ("orphaned"): only ``swarm worktrees prune`` removes it.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from swarm.backends.base import Backend, Handle
from swarm.backends.procs import (
    interrupt_process,
    is_pid_alive,
    kill_tree,
    remove_scratch,
)
from swarm.backends.select import make_backend
from swarm.core.home import Home
from swarm.core.members import mark_gone_where
from swarm.core.protocol import GONE_STATUSES, Member, MemberKindName
from swarm.core.store import database, locate
from swarm.core.store.postgres.hosts import HostRows
from swarm.core.teams import TeamStore
from swarm.errors import BackendError
from swarm.runtime.claude_members import ClaudeCodeSide

log = logging.getLogger(__name__)

REAP_GRACE = 1.0
"""Seconds a dead teammate's leftovers get between SIGTERM and SIGKILL."""


@dataclass
class Machine:
    """What this machine shows of a batch of members' processes: each lookup made once for the batch.

    One backend object per (kind, tmux server), and one scan for Claude Code
    processes (``claude``). ``home`` lets the Claude Code teammates of its teams
    be found; without it their processes are still found by agent id, but not
    their lead's.
    """

    env: Mapping[str, str]
    home: Home | None = None
    _made: dict[tuple[str | None, str | None], Backend] = field(default_factory=dict, repr=False)
    _claude: ClaudeCodeSide | None = field(default=None, repr=False)

    def backend(self, member: Member) -> Backend:
        """The backend holding a member swarm started: its tmux server (``tmuxSocket``), else subprocesses."""
        key = (member.backend_type, member.tmux_socket)
        if key not in self._made:
            kind = member.backend_type if member.backend_type in ("tmux", "subprocess") else "subprocess"
            self._made[key] = make_backend(kind, env=self.env, tmux_socket=member.tmux_socket)
        return self._made[key]

    @property
    def claude(self) -> ClaudeCodeSide:
        """The Claude Code processes of this home, scanned once for the batch."""
        if self._claude is None:
            self._claude = ClaudeCodeSide(self.home, self.env)
        return self._claude


class MemberKind(ABC):
    """A member, judged as its kind is: what every kind answers."""

    kind: ClassVar[MemberKindName]
    records_end: ClassVar[bool] = True
    """swarm records this member's end: one found not running that never ran is marked ``killed``."""
    forcible: ClassVar[bool] = True
    """swarm can force it down (``stop``); an in-process teammate stops only with its lead."""

    def __init__(self, member: Member, machine: Machine) -> None:
        self.member = member
        self.machine = machine

    @abstractmethod
    def process_runs(self) -> bool:
        """Its process runs, whatever its entry says."""

    def running(self) -> bool:
        """Running in the team: what ``swarm shutdown`` asks to stop and ``swarm status`` shows as live."""
        return self.process_runs()

    @abstractmethod
    def state(self) -> str:
        """The one word status, ``team show`` and ``team list`` use (see ``status.MemberStatus.state``)."""

    def ended(self) -> bool:
        """swarm recorded its process and that process is gone (False when swarm recorded none)."""
        return False

    def died(self) -> bool:
        """In the team by its entry, but its recorded process is gone: ``reap_dead`` marks it dead."""
        return self.member.present() and self.ended()

    def left(self, approved: bool) -> bool:
        """Asked to shut down (and ``approved`` when it said yes): has it left?"""
        return not self.running()

    @abstractmethod
    def stop(self, grace: float) -> None:
        """Force it down: SIGTERM, then SIGKILL after ``grace`` s; BackendError (nothing changed) when it survives."""

    def after_exit(self, grace: float) -> None:
        """Clean up after it left by itself (background jobs, daemons, its pane)."""

    def interrupt(self) -> bool:
        """Stop its running turn as a person's Ctrl-C in its pane does (True when it was reached); it stays."""
        raise BackendError(f"{self.member.name} cannot be interrupted from swarm: only swarm's own teammates can")

    def sweep(self, grace: float) -> None:
        """Stop what a gone member left behind (its token's processes, then its scratch directories); its recorded
        pid only if still its own."""
        member = self.member
        if member.proc_token or member.pid is not None:
            _stop_tree(member, grace)

    @property
    def frames_unmarked(self) -> bool:
        """Its frames about itself count without swarm's marker (a Claude Code teammate: ``Member.is_claude_code``)."""
        return self.member.is_claude_code()


class _StartedBySwarm(MemberKind):
    """A member whose process swarm started and recorded: judged by that pid, stopped by pid and token."""

    def process_runs(self) -> bool:
        member = self.member
        return member.pid is not None and is_pid_alive(member.pid, member.proc_start)

    def ended(self) -> bool:
        return self.member.pid is not None and not self.process_runs()

    def stop(self, grace: float) -> None:
        """The teammate and everything it started (``kill_tree``), then its pane.

        A pane left behind is only logged (it closes by itself with its
        process), unless swarm recorded no pid: the pane is then all there is
        to stop, and failing to remove it is a BackendError.
        """
        member = self.member
        _stop_tree(member, grace)
        if member.backend_type == "tmux" and member.tmux_pane_id:
            try:
                self.machine.backend(member).stop(self._handle(), grace=grace)
            except BackendError as exc:
                if member.pid is None:
                    reason = str(exc).removesuffix("; use --backend subprocess")  # that hint is for spawning
                    raise BackendError(f"could not stop {member.name}: its tmux pane {member.tmux_pane_id} was not "
                                       f"closed ({reason}) and swarm has no pid for it; make tmux reachable and try "
                                       "again, or close the pane yourself") from exc
                log.warning("tmux pane not removed", extra={"agent": member.name, "reason": str(exc)})
        if self.process_runs():
            raise BackendError(f"could not stop {member.name} (pid {member.pid}): it survived SIGKILL")

    def after_exit(self, grace: float) -> None:
        self.stop(grace)

    def _handle(self) -> Handle:
        """The member as its backend (``Machine.backend``, already on the member's tmux server) finds it."""
        member = self.member
        pane = member.tmux_pane_id if member.backend_type == "tmux" else ""
        return Handle(backend=member.backend_type or "subprocess", pid=member.pid, pane_id=pane,
                      create_time=member.proc_start)


class SwarmTeammate(_StartedBySwarm):
    """swarm's own teammate: its ``isActive`` and ``status`` are its own; it runs while its pid does."""

    kind = "swarm"

    def running(self) -> bool:
        return bool(self.member.is_active) and self.process_runs()

    def interrupt(self) -> bool:
        """SIGINT to its process — exactly what Ctrl-C in its pane sends (the launcher forwards it to a served
        worker); the teammate stops the running turn, kills a running command, and waits for its next message."""
        member = self.member
        return member.pid is not None and self.running() and interrupt_process(member.pid, member.proc_start)

    def state(self) -> str:
        member = self.member
        if self.running():
            return member.status if member.status in ("idle", "busy", "starting") else "idle"
        if member.pid is None and (member.is_active or member.status == "starting"):
            return "starting"
        return member.status if member.status in GONE_STATUSES else "stopped"


class RemoteTeammate(MemberKind):
    """swarm's own teammate on another host (``Member.host``): its host judges its process, stops it and records
    its end (``runtime.hosts``); here it is what its entry says now (read again: the host changes it)."""

    kind = "swarm"
    records_end = False
    STOP_WAIT: ClassVar[float] = 10.0
    """Seconds beyond the grace a forced stop waits for the host to stop it."""

    def _now(self) -> Member:
        home = self.machine.home
        current = TeamStore(home).get(_team_of(self.member)).member(self.member.name) if home is not None else None
        return current if current is not None and current.proc_token == self.member.proc_token else self.member

    def process_runs(self) -> bool:
        member = self._now()
        return bool(member.is_active) and member.status not in GONE_STATUSES

    def state(self) -> str:
        member = self.member
        if bool(member.is_active) and member.status not in GONE_STATUSES:
            return member.status if member.status in ("idle", "busy", "starting") else "idle"
        if member.status == "starting":
            return "starting"
        return member.status if member.status in GONE_STATUSES else "stopped"

    def stop(self, grace: float) -> None:
        """Its host stops it: the ``stopNotice`` ``begin_stop`` wrote is the request; wait for the host to record
        the end (BackendError when it does not: the host may be gone)."""
        deadline = time.monotonic() + grace + self.STOP_WAIT
        while self.process_runs():
            if time.monotonic() > deadline:
                raise BackendError(f"could not stop {self.member.name}: its host {self.member.host} did not stop it "
                                   f"within {grace + self.STOP_WAIT:g}s (is `swarm host serve` running there?)")
            time.sleep(0.1)

    def ended(self) -> bool:
        """Its host stopped heartbeating (``swarm host serve --dead-after``): it counts as dead — and, should it
        come back, fences itself off (``teammate.fence``)."""
        home, host = self.machine.home, self.member.host
        url = locate(home, _team_of(self.member)) if home is not None and host else None
        return url is not None and host is not None and HostRows(database(home, url)).lost(host)  # type: ignore[arg-type]

    def sweep(self, grace: float) -> None:
        """Nothing here: its processes are on its host."""


class _ClaudeCodeState(MemberKind):
    """Claude Code's ``isActive`` means busy, not alive: swarm's ``status`` and the process say the rest."""

    def state(self) -> str:
        status = self.member.status
        if status in (*GONE_STATUSES, "starting"):
            return status or "stopped"
        if not self.running():
            return "stopped"
        return "busy" if self.member.is_active else "idle"


class ClaudeCodePane(_ClaudeCodeState, _StartedBySwarm):
    """A Claude Code CLI swarm started in a pane (``runtime.claude_teammate``): the pane's process is its pid."""

    kind = "claude-pane"


class LeadsPaneTeammate(_ClaudeCodeState):
    """A pane teammate Claude Code's own lead started: found, and stopped, only by proof (``claude_members``)."""

    kind = "claude-lead-pane"
    records_end = False

    def process_runs(self) -> bool:
        return self.machine.claude.teammate(self.member) is not None

    def stop(self, grace: float) -> None:
        """Only what is proven to be the teammate's (BackendError when no process of it is found)."""
        done = self.machine.claude.stop(self.member, grace)
        log.info("stopped a Claude Code teammate", extra={"agent": self.member.name, "done": done})


class InProcessTeammate(_ClaudeCodeState):
    """A teammate inside its Claude Code lead: running while its entry says so, unless the lead is provably gone."""

    kind = "in-process"
    records_end = False
    forcible = False

    def process_runs(self) -> bool:
        return self.machine.claude.lead_state(_team_of(self.member)) != "gone"

    def running(self) -> bool:
        return self.member.status not in GONE_STATUSES and self.process_runs()

    def left(self, approved: bool) -> bool:
        return approved  # its lead goes on running: its answer is all there is

    def stop(self, grace: float) -> None:
        raise BackendError(f"could not stop {self.member.name}: an in-process teammate lives inside its Claude Code "
                           "lead, with no process of its own; it stops with its lead")


class TeamLead(MemberKind):
    """The team's lead: shown as ``lead``; swarm judges its process (``claude_members.lead_state``) but never stops it."""

    kind = "lead"
    records_end = False
    forcible = False

    def process_runs(self) -> bool:
        return self.machine.claude.lead_state(_team_of(self.member)) != "gone"

    def state(self) -> str:
        return "lead"

    def stop(self, grace: float) -> None:
        raise BackendError(f"{self.member.name} is the team's lead; swarm stops only teammates")

    def sweep(self, grace: float) -> None:
        """Nothing: the lead's processes are the lead's."""


KINDS: dict[MemberKindName, type[MemberKind]] = {
    cls.kind: cls for cls in (SwarmTeammate, ClaudeCodePane, LeadsPaneTeammate, InProcessTeammate, TeamLead)}
"""The class answering for each kind of member."""


def member_kind(member: Member, machine: Machine) -> MemberKind:
    """The member as its kind judges it: the one dispatch on what kind of member an entry is."""
    if member.host is not None and member.kind == "swarm":
        return RemoteTeammate(member, machine)
    return KINDS[member.kind](member, machine)


def reap_dead(home: Home, team: str, names: Collection[str] | None = None) -> list[str]:
    """Mark members whose recorded process is gone as dead, notify the lead for each (once), kill their leftovers.

    The flip from active to dead happens under the team-file lock, so of several
    coordinators checking at once exactly one sends the notification. Only
    members whose process swarm recorded are judged: nothing is scanned.
    ``names``: judge only these members (a spawn checks the name it takes,
    not the whole team: its cost must not grow with the team).
    """
    machine = Machine({}, home)  # judged by recorded pids alone: no backend, no scan

    def died(member: Member) -> bool:
        return (names is None or member.name in names) and member_kind(member, machine).died()

    # the common case: no lock, no write; and no copy of the file nor activity overlay (neither decides a death)
    if not any(died(m) for m in TeamStore(home).current(team).members):
        return []
    dead = mark_gone_where(home, team, "dead", died, notice=lambda m: _death_notice(m, team))
    for member in dead:
        member_kind(member, machine).sweep(REAP_GRACE)
    return [m.name for m in dead]


def _death_notice(member: Member, team: str) -> str:
    if member.host:
        return (f"{member.name} is lost: its host {member.host} stopped heartbeating; it counts as dead and stops "
                f"itself if it comes back")
    return (f"{member.name} died unexpectedly (process gone); "
            f"its unfinished work may be lost{_worktree_note(member, team)}")


def _worktree_note(member: Member, team: str) -> str:
    if not member.worktree_path:
        return ""
    return (f"; its worktree {member.worktree_path} (branch {member.worktree_branch}) is kept as it is — "
            f"review it, then `swarm worktrees prune --team {team}` removes it if unchanged")


def _stop_tree(member: Member, grace: float) -> None:
    """The member's processes (``kill_tree``), then, all of them gone, the scratch directories its process made
    (``remove_scratch``: what a teammate killed with ``kill -9`` could not remove itself)."""
    kill_tree(member.pid, grace, member.proc_start, token=member.proc_token, also=_worker(member))
    removed = remove_scratch(member.proc_token)
    if removed:
        log.info("removed what a stopped teammate left in /tmp", extra={"agent": member.name,
                                                                         "paths": [str(p) for p in removed]})


def _worker(member: Member) -> list[tuple[int, float | None]]:
    """A teammate forked from the CLI server: its own process, beside the launcher ``pid`` names."""
    return [(member.worker_pid, member.worker_start)] if member.worker_pid is not None else []


def _team_of(member: Member) -> str:
    return member.agent_id.rpartition("@")[2]
