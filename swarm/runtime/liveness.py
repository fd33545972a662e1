"""Detect teammates that died (crash, kill -9, pane closed) and tell the lead once."""

from __future__ import annotations

import logging

from swarm.core.clock import now_ms
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.names import LEAD_NAME
from swarm.core.protocol import TeamFile, TeammateTerminated, frame_text
from swarm.core.teams import TeamStore
from swarm.runtime.handles import process_alive

log = logging.getLogger(__name__)


def reap_dead(home: Home, team: str) -> list[str]:
    """Mark active members whose process is gone as dead; notify the lead for each, once.

    The flip from active to dead happens under the team-file lock, so of several
    coordinators checking at once exactly one sends the notification.
    """
    def flip(current: TeamFile) -> list[str]:
        dead = []
        for member in current.members:
            if member.name == LEAD_NAME or not member.is_active or member.pid is None:
                continue
            if not process_alive(member):
                member.is_active = False
                member.status = "dead"
                member.last_activity = now_ms()
                dead.append(member.name)
        return dead

    dead: list[str] = TeamStore(home).modify(team, flip)
    for name in dead:
        notify_terminated(home, team, f"{name} died unexpectedly (process gone); its unfinished work may be lost")
    return dead


def notify_terminated(home: Home, team: str, message: str) -> None:
    log.warning("teammate terminated", extra={"team": team, "detail": message})
    Mailbox(home, team).send(LEAD_NAME, frame_text(TeammateTerminated(message=message)),
                             sender="swarm", summary="teammate terminated")
