"""Detect teammates that died (crash, kill -9, pane closed) and tell the lead once.

A dead teammate's worktree is left as it is ("orphaned"): what it holds may be
half done, so only ``swarm worktrees prune`` removes it, and only if unchanged.
"""

from __future__ import annotations

import logging

from swarm.core.clock import now_ms
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.names import LEAD_NAME
from swarm.core.protocol import Member, TeamFile, TeammateTerminated, frame_text
from swarm.core.teams import TeamStore
from swarm.runtime.handles import process_alive

log = logging.getLogger(__name__)


def reap_dead(home: Home, team: str) -> list[str]:
    """Mark active members whose process is gone as dead; notify the lead for each, once.

    The flip from active to dead happens under the team-file lock, so of several
    coordinators checking at once exactly one sends the notification.
    """
    def flip(current: TeamFile) -> list[Member]:
        dead = []
        for member in current.members:
            if _looks_dead(member):
                member.is_active = False
                member.status = "dead"
                member.last_activity = now_ms()
                dead.append(member)
        return dead

    teams = TeamStore(home)
    if not any(_looks_dead(m) for m in teams.get(team).members):  # the common case: no lock, no write
        return []
    dead: list[Member] = teams.modify(team, flip)
    for member in dead:
        notify_terminated(home, team, f"{member.name} died unexpectedly (process gone); "
                                      f"its unfinished work may be lost{_worktree_note(member, team)}")
    return [m.name for m in dead]


def _looks_dead(member: Member) -> bool:
    return (member.name != LEAD_NAME and bool(member.is_active) and member.pid is not None
            and not process_alive(member))


def _worktree_note(member: Member, team: str) -> str:
    if not member.worktree_path:
        return ""
    return (f"; its worktree {member.worktree_path} (branch {member.worktree_branch}) is kept as it is — "
            f"review it, then `swarm worktrees prune --team {team}` removes it if unchanged")


def notify_terminated(home: Home, team: str, message: str) -> None:
    log.info("teammate terminated", extra={"team": team, "detail": message})
    Mailbox(home, team).send(LEAD_NAME, frame_text(TeammateTerminated(message=message)),
                             sender="swarm", summary="teammate terminated")
