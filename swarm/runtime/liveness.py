"""Detect teammates that died (crash, kill -9, pane closed), tell the lead once, and reap what they left.

A dead teammate's processes are reaped when its death is noticed: every
process carrying its token (Bash commands, background jobs, daemons that
double-forked away) gets SIGTERM, then SIGKILL. Only members this call found
dead are scanned, so the common case (nobody died) reads the team file and
nothing else.

A dead teammate's worktree is left as it is ("orphaned"): what it holds may be
half done, so only ``swarm worktrees prune`` removes it, and only if unchanged.
"""

from __future__ import annotations

from swarm.core.home import Home
from swarm.core.members import mark_gone_where
from swarm.core.names import LEAD_NAME
from swarm.core.protocol import Member
from swarm.core.teams import TeamStore
from swarm.runtime.handles import process_alive, sweep

REAP_GRACE = 1.0
"""Seconds a dead teammate's leftovers get between SIGTERM and SIGKILL."""


def reap_dead(home: Home, team: str) -> list[str]:
    """Mark active members whose process is gone as dead, notify the lead for each (once), kill their leftovers.

    The flip from active to dead happens under the team-file lock, so of several
    coordinators checking at once exactly one sends the notification.
    """
    if not any(_looks_dead(m) for m in TeamStore(home).get(team).members):  # the common case: no lock, no write
        return []
    dead = mark_gone_where(home, team, "dead", _looks_dead, notice=lambda m: _death_notice(m, team))
    for member in dead:
        sweep(member, REAP_GRACE)
    return [m.name for m in dead]


def _looks_dead(member: Member) -> bool:
    return member.name != LEAD_NAME and member.present() and member.pid is not None and not process_alive(member)


def _death_notice(member: Member, team: str) -> str:
    return (f"{member.name} died unexpectedly (process gone); "
            f"its unfinished work may be lost{_worktree_note(member, team)}")


def _worktree_note(member: Member, team: str) -> str:
    if not member.worktree_path:
        return ""
    return (f"; its worktree {member.worktree_path} (branch {member.worktree_branch}) is kept as it is — "
            f"review it, then `swarm worktrees prune --team {team}` removes it if unchanged")
