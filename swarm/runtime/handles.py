"""From a member entry back to its processes: liveness, and stopping everything it started.

A member entry records the teammate's pid with its create time (``proc_start``)
and a token (``proc_token``) that every process it started carries in its
environment; a teammate forked from the CLI server also its worker's
(``worker_pid``: ``swarm.teammate.served``), stopped with its launcher.
Both checks go through ``swarm.backends.procs``: ``is_pid_alive``
(a reused pid is not the teammate) and ``kill_tree`` (the teammate, its
descendants, and every process carrying its token — also after the teammate
itself was SIGKILLed and its children were reparented away).

Stopping works without the backend: the processes are local, so a member in
a tmux pane is stopped by pid and token even when tmux is missing from PATH;
the pane is then removed if tmux can be reached (it also closes by itself
when its process ends).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from swarm.backends.base import Backend, Handle
from swarm.backends.procs import is_pid_alive, kill_tree
from swarm.backends.select import make_backend
from swarm.core.home import Home
from swarm.core.protocol import CLAUDE_RUNTIME, Member, TeamFile
from swarm.errors import BackendError
from swarm.runtime.claude_members import ClaudeCodeSide

log = logging.getLogger(__name__)


def handle_of(member: Member) -> Handle:
    backend = member.backend_type or "subprocess"
    pane = member.tmux_pane_id if backend == "tmux" else ""
    extra = {"socket": member.tmux_socket} if member.tmux_socket else {}
    return Handle(backend=backend, pid=member.pid, pane_id=pane, create_time=member.proc_start, extra=extra)


def backend_of(member: Member, env: Mapping[str, str]) -> Backend:
    kind = member.backend_type if member.backend_type in ("tmux", "subprocess") else "subprocess"
    return make_backend(kind, env=env, tmux_socket=member.tmux_socket)


@dataclass
class Backends:
    """One backend object per (kind, tmux server) for a batch of members: the tmux checks run once.

    ``home`` lets the Claude Code teammates of its teams be found (``claude``); without it
    their processes are still found by agent id, but not their lead's.
    """

    env: Mapping[str, str]
    home: Home | None = None
    _made: dict[tuple[str | None, str | None], Backend] = field(default_factory=dict)
    _claude: ClaudeCodeSide | None = None

    def of(self, member: Member) -> Backend:
        key = (member.backend_type, member.tmux_socket)
        if key not in self._made:
            self._made[key] = backend_of(member, self.env)
        return self._made[key]

    @property
    def claude(self) -> ClaudeCodeSide:
        """The Claude Code processes of this home, scanned once for the batch."""
        if self._claude is None:
            self._claude = ClaudeCodeSide(self.home, self.env)
        return self._claude


def process_alive(member: Member) -> bool:
    """True if the member's recorded process still runs (pid reuse ruled out by its create time)."""
    return member.pid is not None and is_pid_alive(member.pid, member.proc_start)


def claude_code_member(member: Member) -> bool:
    """A Claude Code teammate: one swarm started (``runtime: claude``), or one Claude Code's own lead
    started (no pid recorded: that lead keeps it), in a pane or in-process."""
    return member.is_claude_code()


def started_by_claude_code(member: Member) -> bool:
    """A teammate Claude Code's own lead started: swarm keeps no pid of it (``claude_members`` finds it)."""
    return member.runtime != CLAUDE_RUNTIME and member.is_claude_code()


def is_running(member: Member, backends: Backends) -> bool:
    """Whether the member's teammate is running, judged per backend.

    swarm's own: its pid, with the create time (``process_alive``). A Claude
    Code pane teammate swarm started: its pane, holding the recorded pid
    (``isActive: false`` only means idle there). One Claude Code's lead
    started (no pid): its process, found by agent id (``claude_members``). A
    Claude Code in-process teammate lives inside its lead: running while its
    entry says so, unless the lead is provably gone.
    """
    if not claude_code_member(member):
        return bool(member.is_active) and process_alive(member)
    if member.backend_type == "in-process":
        return member.status not in ("stopped", "killed", "dead") \
            and backends.claude.lead_state(member.agent_id.rpartition("@")[2]) != "gone"
    if started_by_claude_code(member):
        return backends.claude.teammate(member) is not None
    try:
        return backends.of(member).is_alive(handle_of(member))
    except BackendError as exc:
        log.info("pane liveness unknown", extra={"agent": member.name, "reason": str(exc)})
        return False


def stop_processes(member: Member, backends: Backends, grace: float) -> None:
    """SIGTERM, then SIGKILL after ``grace`` s, the teammate and everything it started; remove its pane.

    BackendError (nothing about the member changed) when its process survives,
    and when its pane cannot be removed (tmux missing or failing) while swarm
    recorded no pid for it (a Claude Code teammate): the pane is then all
    there is to stop. With a pid stopped, a pane left behind is only logged:
    it closes by itself. A teammate Claude Code's own lead started: only its
    process and pane as proven by ``claude_members`` (BackendError when no
    process of it is found).
    """
    if started_by_claude_code(member):  # only what is proven to be the teammate's
        log.info("stopped a Claude Code teammate", extra={"agent": member.name,
                                                           "done": backends.claude.stop(member, grace)})
        return
    kill_tree(member.pid, grace, member.proc_start, token=member.proc_token, also=_worker(member))
    if member.backend_type == "tmux" and member.tmux_pane_id:
        try:
            backends.of(member).stop(handle_of(member), grace=grace)
        except BackendError as exc:
            if member.pid is None:
                reason = str(exc).removesuffix("; use --backend subprocess")  # that hint is for spawning
                raise BackendError(f"could not stop {member.name}: its tmux pane {member.tmux_pane_id} was not "
                                   f"closed ({reason}) and swarm has no pid for it; make tmux reachable and try "
                                   "again, or close the pane yourself") from exc
            log.warning("tmux pane not removed", extra={"agent": member.name, "reason": str(exc)})
    if process_alive(member):
        raise BackendError(f"could not stop {member.name} (pid {member.pid}): it survived SIGKILL")


def sweep(member: Member, grace: float) -> None:
    """Stop what a gone member left behind (its token's processes); its recorded pid only if still its own."""
    if member.proc_token or member.pid is not None:
        kill_tree(member.pid, grace, member.proc_start, token=member.proc_token, also=_worker(member))


def _worker(member: Member) -> list[tuple[int, float | None]]:
    """A teammate forked from the CLI server: its own process, beside the launcher ``pid`` names."""
    return [(member.worker_pid, member.worker_start)] if member.worker_pid is not None else []


def claude_code_senders(team: TeamFile) -> frozenset[str]:
    """Names of the team's Claude Code teammates: their frames about themselves count without swarm's marker."""
    return frozenset(m.name for m in team.members if claude_code_member(m))
