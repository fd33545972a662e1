"""Member lifecycle on the team file: the one place a member goes from active to gone.

A member leaves the team in one of three ways, each a status on its entry:

- ``stopped``: it approved a shutdown and exited (the teammate says so itself,
  or the runtime does after it saw the process end);
- ``dead``: its process vanished without a shutdown (crash, ``kill -9``, pane
  closed), noticed by the teammate's own signal handler or by whoever checks
  liveness next (``reap_dead``);
- ``killed``: the runtime forced it down (``swarm kill``, a shutdown timeout,
  ``team delete --force``).

Several processes may notice the same end at once (the teammate's own exit
path, a coordinator's ``reap_dead``, a ``swarm kill``). The flip from active
to inactive happens under the team-file lock, and only the caller that
actually flipped it gets ``True`` back; that caller alone sends the lead the
``teammate_terminated`` notice, so a death is reported exactly once however
many processes notice it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Literal

from swarm.core.clock import now_ms
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.names import LEAD_NAME
from swarm.core.protocol import Member, TeamFile, TeammateTerminated, frame_text
from swarm.core.teams import TeamStore
from swarm.errors import NotFoundError

log = logging.getLogger(__name__)

GoneStatus = Literal["stopped", "dead", "killed"]
GONE_STATUSES: tuple[GoneStatus, ...] = ("stopped", "dead", "killed")
NOTICE_SENDER = "swarm"
"""The ``from`` of notices the runtime itself sends the lead."""


def mark_gone(home: Home, team: str, name: str, status: GoneStatus, notice: str | None = None) -> bool:
    """Mark member ``name`` inactive with ``status``; True only for the caller that flipped it from active.

    If this call flipped it and ``notice`` is given, the lead gets one
    ``teammate_terminated`` frame carrying ``notice``. A member that is
    already gone keeps its status (the first to notice the end names it); one
    that never became active (``starting``) takes ``status``, with no notice.
    NotFoundError when the team or the member does not exist.
    """
    def flip(current: TeamFile) -> bool:
        member = current.member(name)
        if member is None:
            raise NotFoundError(f"no member {name!r} in team {team!r}")
        return _flip(member, status)

    flipped = bool(TeamStore(home).modify(team, flip))
    if flipped and notice is not None:
        notify_lead(home, team, notice)
    return flipped


def mark_gone_where(home: Home, team: str, status: GoneStatus, gone: Callable[[Member], bool],
                    notice: Callable[[Member], str | None] = lambda m: None) -> list[Member]:
    """The batch form: every active member (never the lead) for which ``gone`` holds is flipped to ``status``.

    ``gone`` runs under the team-file lock, on the current entries. Returns
    the members this call flipped; each one's ``notice`` (if not None) is sent
    to the lead once.
    """
    def flip(current: TeamFile) -> list[Member]:
        return [m for m in current.members
                if m.name != LEAD_NAME and m.is_active and gone(m) and _flip(m, status)]

    flipped: list[Member] = TeamStore(home).modify(team, flip)
    for member in flipped:
        text = notice(member)
        if text is not None:
            notify_lead(home, team, text)
    return flipped


def notify_lead(home: Home, team: str, message: str) -> None:
    """One ``teammate_terminated`` frame from the runtime to the lead."""
    log.info("teammate terminated", extra={"team": team, "detail": message})
    Mailbox(home, team).send(LEAD_NAME, frame_text(TeammateTerminated(message=message)),
                             sender=NOTICE_SENDER, summary="teammate terminated")


def _flip(member: Member, status: GoneStatus) -> bool:
    was_active = bool(member.is_active)
    if was_active or member.status not in GONE_STATUSES:
        member.is_active = False
        member.status = status
        member.last_activity = now_ms()
    return was_active
