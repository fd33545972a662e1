"""Stop teammates: the shutdown handshake first, force after the timeout.

request -> wait for the process to exit (or a ``shutdown_rejected`` answer) ->
pane/process cleaned up and the member marked inactive. A teammate that has
not exited when the timeout passes gets SIGTERM, then SIGKILL of its whole
process tree, its pane killed, and the lead is told with ``teammate_terminated``.
Either way a stopped teammate's worktree is then settled: removed if
unchanged, kept and reported to the lead if changed.

Whatever a teammate started stops with it: each member is judged, stopped
and swept as its kind says (``member_kinds``: its process tree and every
process carrying its token, for what swarm started).
A member is marked gone (``core.members.mark_gone``) only after its
processes are gone: a stop that fails leaves the member as it was.
``delete_team`` is ``swarm team delete``: with ``force`` a teammate that
rejects the shutdown is killed too, before the team directory goes.

The answers are read from what the process's one consumer of the lead's inbox
recorded (``runtime.lead_inbox``): a caller that runs one (a coordinator) passes
it, and the shutdown collects through it while it waits, so an answer the
coordinator's pump takes meanwhile is still heard. Without one (``swarm
shutdown``), the shutdown is that consumer for as long as it waits, and leaves
the inbox as it is.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from swarm.core.frames import ShutdownApproved, ShutdownRejected
from swarm.core.home import Home
from swarm.core.members import (
    begin_stop,
    cancel_stop,
    mark_gone,
    request_shutdown,
)
from swarm.core.names import LEAD_NAME
from swarm.core.protocol import GONE_STATUSES, Member
from swarm.core.teams import TeamStore
from swarm.errors import NotFoundError
from swarm.runtime.lead_inbox import LeadInbox
from swarm.runtime.member_kinds import Machine, member_kind, reap_dead
from swarm.runtime.worktrees import Worktree, finish_worktree

log = logging.getLogger(__name__)

F = TypeVar("F", ShutdownApproved, ShutdownRejected)

POLL = 0.02
KILL_GRACE = 2.0


@dataclass
class Outcome:
    name: str
    result: str
    """``approved`` (exited by itself), ``rejected``, ``killed``, or ``not_running``."""
    detail: str = ""
    worktree: Worktree | None = None
    """The teammate's worktree after it stopped: ``removed`` (unchanged) or ``changed`` (kept)."""


def live_members(home: Home, team: str, names: Iterable[str] | None = None) -> list[Member]:
    members = [m for m in TeamStore(home).get(team).members if m.name != LEAD_NAME]
    if names is not None:
        wanted = list(names)
        known = {m.name for m in members}
        missing = [n for n in wanted if n not in known]
        if missing:
            raise NotFoundError(f"no teammate {missing[0]!r} in team {team!r}; `swarm status --team {team}` lists them")
        members = [m for m in members if m.name in wanted]
    return members


def shutdown(home: Home, team: str, names: Iterable[str] | None, env: Mapping[str, str], *,
             reason: str | None = None, timeout: float = 30.0, escalate: bool = False,
             inbox: LeadInbox | None = None) -> list[Outcome]:
    """Ask each named (default: every) teammate to stop; force the ones that do not answer in time.

    With ``escalate`` a teammate that rejects the request is forced down too.
    A member that is not running (gone, or still starting) has the processes
    carrying its token stopped; one that was starting is marked ``killed``.
    ``inbox``: the lead's inbox as this process's coordinator consumes it
    (None: nothing here does; see the module docstring).
    """
    reap_dead(home, team)
    members = live_members(home, team, names)
    machine = Machine(env, home)
    running = [m for m in members if member_kind(m, machine).running()]
    outcomes = [_sweep_gone(home, team, m, machine) for m in members if m not in running]
    requests = {m.name: request_shutdown(home, team, m.name, reason) for m in running}
    answers = inbox if inbox is not None else LeadInbox(home, team, prune=False)
    try:
        outcomes += _await(home, team, running, requests, env, timeout, escalate, answers)
    finally:
        if inbox is None:
            answers.close()
    return outcomes


def delete_team(home: Home, team: str, env: Mapping[str, str], *, force: bool, timeout: float) -> list[Outcome]:
    """Stop every teammate, then remove the team; ``force`` kills those that reject the shutdown.

    Without ``force`` the team stays (ConflictError) while a teammate is still active.
    """
    outcomes = shutdown(home, team, None, env, reason="team deleted", timeout=timeout, escalate=force)
    TeamStore(home).delete(team, force=force)
    return outcomes


def _sweep_gone(home: Home, team: str, member: Member, machine: Machine) -> Outcome:
    kind = member_kind(member, machine)
    kind.sweep(KILL_GRACE)
    if member.status not in GONE_STATUSES and kind.records_end:  # it was starting: never ran
        mark_gone(home, team, member.name, "killed")
    # a teammate that stopped by itself (it approved a shutdown) leaves its worktree to be settled here
    return Outcome(member.name, "not_running", member.status or "", worktree=finish_worktree(home, team, member))


def _await(home: Home, team: str, members: list[Member], requests: dict[str, str],
           env: Mapping[str, str], timeout: float, escalate: bool, inbox: LeadInbox) -> list[Outcome]:
    deadline = time.monotonic() + timeout
    waiting = {m.name: m for m in members}
    outcomes = []
    machine = Machine(env, home)
    while waiting and time.monotonic() < deadline:
        machine = Machine(env, home)  # each round looks again (a batch scans Claude Code's processes once)
        inbox.collect()
        rejected = _rejections(inbox, requests)
        approved = _approvals(inbox, requests)
        for name, member in list(waiting.items()):
            if member_kind(member, machine).left(approved=name in approved):
                outcomes.append(_finish(home, team, member, machine, "approved"))
                del waiting[name]
            elif name in rejected and escalate:
                outcomes.append(force_stop(home, team, member, env, machine=machine,
                                           why=f"it rejected the shutdown ({rejected[name]}) and was forced"))
                del waiting[name]
            elif name in rejected:
                outcomes.append(Outcome(name, "rejected", rejected[name]))
                del waiting[name]
        time.sleep(POLL)
    for member in waiting.values():
        if not member_kind(member, machine).forcible:  # it lives inside a Claude Code lead: nothing to signal
            outcomes.append(Outcome(member.name, "no_answer", "an in-process teammate stops with its lead"))
            continue
        outcomes.append(force_stop(home, team, member, env, why=f"did not shut down within {timeout:g}s",
                                   machine=machine))
    return outcomes


def _rejections(inbox: LeadInbox, requests: dict[str, str]) -> dict[str, str]:
    return {name: frame.reason for name, frame in _answers(inbox, requests, ShutdownRejected).items()}


def _approvals(inbox: LeadInbox, requests: dict[str, str]) -> set[str]:
    return set(_answers(inbox, requests, ShutdownApproved))


def _answers(inbox: LeadInbox, requests: dict[str, str], kind: type[F]) -> dict[str, F]:
    """Answers of ``kind`` to our requests that reached the lead, by teammate (each from the teammate asked)."""
    by_id = {rid: name for name, rid in requests.items()}
    found: dict[str, F] = {}
    for message in inbox.recorded():
        frame = message.frame
        if isinstance(frame, kind) and getattr(frame, "request_id", None) in by_id \
                and getattr(frame, "sender", None) == by_id[getattr(frame, "request_id")]:
            found[by_id[getattr(frame, "request_id")]] = frame
    return found


def _finish(home: Home, team: str, member: Member, machine: Machine, result: str) -> Outcome:
    member_kind(member, machine).after_exit(KILL_GRACE)  # its leftovers (background jobs, daemons) and its pane
    mark_gone(home, team, member.name, "stopped")  # a teammate that exits cleanly has already marked itself
    return Outcome(member.name, result, worktree=finish_worktree(home, team, member))


def force_stop(home: Home, team: str, member: Member, env: Mapping[str, str], *, why: str,
               machine: Machine | None = None) -> Outcome:
    """SIGTERM, then SIGKILL the teammate and everything it started, remove its pane, tell the lead (once).

    The member is marked ``killed`` only once its processes are gone; when
    they cannot be stopped the BackendError leaves it as it was. A teammate
    that handles the SIGTERM records its end itself, as ``killed`` with this
    notice (``begin_stop``), so the lead is told once, and why.
    """
    notice = f"{member.name} was terminated: {why}"
    begin_stop(home, team, member.name, notice)
    try:
        member_kind(member, machine or Machine(env, home)).stop(KILL_GRACE)
    except BaseException:
        cancel_stop(home, team, member.name)
        raise
    mark_gone(home, team, member.name, "killed", notice=notice)
    return Outcome(member.name, "killed", why, worktree=finish_worktree(home, team, member))
