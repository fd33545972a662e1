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

A forced stop is announced first (``begin_stop``, the member stays active):
the teammate's own exit path may then record the end before the runtime
does, and records it as the runtime's ``killed`` with the runtime's notice,
so the lead learns why. A stop that fails is withdrawn (``cancel_stop``) and
the member is as it was.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from swarm.core.clock import now_iso, now_ms
from swarm.core.frames import ShutdownRequest, TeammateTerminated
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.names import LEAD_NAME, RUNTIME_NAME
from swarm.core.protocol import GONE_STATUSES, GoneStatus, Member, Task, TeamFile
from swarm.core.tasks import TaskStore
from swarm.core.teams import TeamStore
from swarm.errors import NotFoundError, SwarmError

log = logging.getLogger(__name__)

NOTICE_SENDER = RUNTIME_NAME
"""The ``from`` of notices the runtime itself sends the lead."""


def mark_gone(home: Home, team: str, name: str, status: GoneStatus, notice: str | None = None) -> bool:
    """Mark member ``name`` inactive with ``status``; True only for the caller that flipped it from active.

    If this call flipped it and ``notice`` is given, the lead gets one
    ``teammate_terminated`` frame carrying ``notice``. A member that is
    already gone keeps its status (the first to notice the end names it); one
    that never became active (``starting``) takes ``status``, with no notice.
    NotFoundError when the team or the member does not exist.
    """
    def flip(current: TeamFile) -> tuple[bool, str | None]:
        member = _member(current, team, name)
        told = member.stop_notice or notice
        return _flip(member, status), told

    flipped, told = TeamStore(home).modify(team, flip)
    release_tasks(home, team, name, status, told if flipped else None)
    return bool(flipped)


def begin_stop(home: Home, team: str, name: str, notice: str) -> None:
    """Announce that the runtime is forcing active member ``name`` down, and what to tell the lead."""
    def announce(current: TeamFile) -> None:
        member = _member(current, team, name)
        if member.present():
            member.stop_notice = notice

    TeamStore(home).modify(team, announce)


def cancel_stop(home: Home, team: str, name: str) -> None:
    """Withdraw ``begin_stop`` after the stop failed; the member is left as it was."""
    def withdraw(current: TeamFile) -> None:
        member = current.member(name)
        if member is not None and member.stop_notice is not None:
            member.stop_notice = None

    TeamStore(home).modify(team, withdraw)


def mark_gone_where(home: Home, team: str, status: GoneStatus, gone: Callable[[Member], bool],
                    notice: Callable[[Member], str | None] = lambda m: None) -> list[Member]:
    """The batch form: every active member (never the lead) for which ``gone`` holds is flipped to ``status``.

    ``gone`` runs under the team-file lock, on the current entries. Returns
    the members this call flipped; each one's ``notice`` (if not None) is sent
    to the lead once.
    """
    def flip(current: TeamFile) -> list[Member]:
        return [m for m in current.members
                if m.name != LEAD_NAME and m.present() and gone(m) and _flip(m, status)]

    def note(current: TeamFile) -> list[tuple[Member, str | None]]:
        return [(m, m.stop_notice or notice(m)) for m in flip(current)]

    flipped: list[tuple[Member, str | None]] = TeamStore(home).modify(team, note)
    for member, text in flipped:
        release_tasks(home, team, member.name, member.status or status, text)
    return [member for member, _ in flipped]


def release_tasks(home: Home, team: str, name: str, status: str, notice: str | None) -> list[Task]:
    """Put gone member ``name``'s unfinished tasks back to pending, unowned, and tell the lead which.

    ``notice`` (the termination notice, when there is one) is sent with the
    task ids added; without one, a notice of its own goes out only if some
    task was released. Returns the released tasks.
    """
    try:
        freed = TaskStore(home, team).unassign(name)
    except SwarmError as exc:  # the lead still hears of the end, and of what could not be undone
        log.error("tasks not released", extra={"team": team, "agent": name, "error": str(exc)})
        freed, notice = [], f"{notice or _gone_text(name, status)}; its tasks could not be released: {exc}"
    if notice is None and freed:
        notice = _gone_text(name, status)
    if notice is not None:
        notify_lead(home, team, notice + _freed_text(freed))
    return freed


def _gone_text(name: str, status: str) -> str:
    verb = {"stopped": "stopped", "dead": "died", "killed": "was stopped by force"}.get(status, "is gone")
    return f"{name} {verb}"


def _freed_text(freed: list[Task]) -> str:
    """``"; its tasks 2, 5 are pending again"`` (empty when nothing was released)."""
    if not freed:
        return ""
    ids = ", ".join(t.id for t in freed)
    return f"; its task {ids} is pending again" if len(freed) == 1 else f"; its tasks {ids} are pending again"


def notify_lead(home: Home, team: str, message: str) -> None:
    """One ``teammate_terminated`` frame from the runtime to the lead."""
    log.info("teammate terminated", extra={"team": team, "detail": message})
    Mailbox(home, team).send_frame(LEAD_NAME, TeammateTerminated(message=message),
                                   sender=NOTICE_SENDER, summary="teammate terminated")


def _member(current: TeamFile, team: str, name: str) -> Member:
    member = current.member(name)
    if member is None:
        raise NotFoundError(f"no member {name!r} in team {team!r}")
    return member


def _flip(member: Member, status: GoneStatus) -> bool:
    was_active = member.present()
    if was_active or member.status not in GONE_STATUSES:
        member.is_active = False
        member.status = "killed" if member.stop_notice else status
        member.last_activity = now_ms()
        member.stop_notice = None
    return was_active


def request_shutdown(home: Home, team: str, name: str, reason: str | None) -> str:
    """Ask member ``name`` to stop, as the lead (a ``shutdown_request`` frame); return the request id."""
    request_id = f"shutdown-{now_ms()}@{name}"
    frame = ShutdownRequest(request_id=request_id, sender=LEAD_NAME, timestamp=now_iso(), reason=reason)
    Mailbox(home, team).send_frame(name, frame, sender=LEAD_NAME, summary="shutdown request")
    return request_id
