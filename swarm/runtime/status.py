"""What each member is doing: backend, process, state, queue, activity, tokens, worktree."""

from __future__ import annotations

import os
from collections.abc import Mapping

from pydantic import BaseModel

from swarm.core.clock import now_ms
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.core.teams import TeamStore
from swarm.errors import SwarmError
from swarm.runtime.costs import team_cost
from swarm.runtime.member_kinds import Machine, member_kind, reap_dead
from swarm.runtime.worktrees import of_member


class MemberStatus(BaseModel):
    name: str
    agent_type: str | None
    backend: str
    pid: int | None
    pane: str
    state: str
    """``lead``, ``starting``, ``idle``, ``busy``, ``dead``, ``stopped`` or ``killed`` (``MemberKind.state``)."""
    undelivered: int
    last_activity_ms: int | None
    idle_for_s: float | None
    tokens: int
    cache_read_tokens: int = 0
    """Of ``tokens``, input read from the prompt cache."""
    cache_creation_tokens: int = 0
    """Of ``tokens``, input written to the prompt cache."""
    cost_usd: float = 0.0
    """US dollars its model calls cost so far, restarts included (``swarm.runtime.costs``)."""
    color: str | None
    cwd: str
    worktree: str | None
    worktree_state: str | None = None
    """``live``, ``changed``, ``unchanged``, ``orphaned``, ``removed`` (or ``unknown`` if git failed)."""
    worktree_branch: str | None = None
    worktree_ahead: int | None = None
    """Commits beyond the worktree's base."""
    worktree_changes: str | None = None
    """Short summary: commits ahead, uncommitted paths, diffstat totals."""
    host: str | None = None
    """The host running it (``swarm host serve``; ``""`` while being placed); None: this machine."""


def team_status(home: Home, team: str, env: Mapping[str, str] | None = None) -> list[MemberStatus]:
    """Status of every member; dead teammates are detected (and reported once) first."""
    reap_dead(home, team)
    mailbox = Mailbox(home, team)
    machine = Machine(os.environ if env is None else env, home)
    rows = [_row(team, m, len(mailbox.pending(m.name)), machine) for m in TeamStore(home).get(team).members]
    spent = team_cost(home, team).by_member
    for row in rows:
        row.cost_usd = spent.get(row.name, 0.0)
    return rows


def _row(team: str, member: Member, undelivered: int, machine: Machine) -> MemberStatus:
    last = member.last_activity
    row = MemberStatus(
        name=member.name, agent_type=member.agent_type, backend=member.backend_type or "",
        pid=member.pid, pane=member.tmux_pane_id, state=member_kind(member, machine).state(), undelivered=undelivered,
        last_activity_ms=last, idle_for_s=(now_ms() - last) / 1000 if last else None,
        tokens=member.tokens or 0, cache_read_tokens=member.cache_read_tokens or 0,
        cache_creation_tokens=member.cache_creation_tokens or 0, color=member.color, cwd=member.cwd,
        worktree=member.worktree_path, host=member.host,
    )
    if member.worktree_path:
        _add_worktree(team, member, row)
    return row


def _add_worktree(team: str, member: Member, row: MemberStatus) -> None:
    row.worktree_branch = member.worktree_branch
    try:
        tree = of_member(team, member)
    except SwarmError:  # e.g. the repository was moved; status still shows everything else
        row.worktree_state = "unknown"
        return
    if tree is not None:
        row.worktree_state = tree.state
        if tree.state != "removed":
            row.worktree_ahead, row.worktree_changes = tree.ahead, tree.summary


RUNNING_STATES = ("starting", "idle", "busy")
"""``MemberKind.state`` values of a teammate that is in the team and running."""


def running(state: str) -> bool:
    """Whether a ``MemberKind.state`` is that of a running teammate (the lead's ``lead`` is not judged)."""
    return state in RUNNING_STATES
