"""The watchdog: a teammate that holds a task in progress but has done nothing for a while is nudged, then reported.

``--stall-after SECONDS`` (``swarm run``, ``swarm up``) or ``stall_after`` in
a team file's ``[team]``. Whoever coordinates the team checks now and then
(``LeadPump.pump``, at most every ``CHECK_EVERY`` seconds): a running
teammate that owns an ``in_progress`` task and whose last sign of life —
a turn starting or ending (its activity record) or a line in its transcript
(each model reply, each tool result) — is ``stall_after`` seconds old gets
one nudge in its inbox, from the runtime. If, ``stall_after`` after the
nudge, there is still nothing (a turn stuck in one call, a teammate that
went quiet again), the lead is told, once per teammate and task.

What was nudged lives in this object: a coordinator started anew (a lead
resumed) may nudge once more.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.names import LEAD_NAME, RUNTIME_NAME
from swarm.core.protocol import Member, Task
from swarm.core.tasks import TaskStore
from swarm.core.teams import TeamStore
from swarm.errors import SwarmError
from swarm.runtime.member_kinds import Machine, member_kind

log = logging.getLogger(__name__)

CHECK_EVERY = 5.0
"""Seconds between two checks at most (a short ``stall_after`` checks more often)."""


@dataclass
class _Watch:
    nudged_at: float
    reported: bool = False


@dataclass
class Watchdog:
    home: Home
    team: str
    stall_after: float
    clock: Callable[[], float] = time.time
    _watches: dict[tuple[str, int, str], _Watch] = field(default_factory=dict)
    _next: float = 0.0

    def check(self) -> None:
        """Nudge or report each stalled teammate (nothing when checked less than a moment ago)."""
        now = self.clock()
        if now < self._next:
            return
        self._next = now + min(CHECK_EVERY, self.stall_after / 4)
        try:
            tasks = [t for t in TaskStore(self.home, self.team).list() if t.status == "in_progress" and t.owner]
            if not tasks:
                return
            members = {m.name: m for m in TeamStore(self.home).get(self.team).members if m.name != LEAD_NAME}
        except SwarmError as exc:  # the team may be going away under us; the next check tries again
            log.warning("watchdog check skipped", extra={"team": self.team, "error": str(exc)})
            return
        machine = Machine({}, self.home)
        for task in tasks:
            member = members.get(task.owner or "")
            if member is not None and member_kind(member, machine).running():
                self._judge(member, task, now)

    def _judge(self, member: Member, task: Task, now: float) -> None:
        quiet = now - self._last_sign(member)
        key = (member.name, member.joined_at, task.id)
        watch = self._watches.get(key)
        if watch is None:
            if quiet >= self.stall_after:
                self._watches[key] = _Watch(now)
                self._nudge(member, task, quiet)
            return
        if not watch.reported and quiet >= self.stall_after and now - watch.nudged_at >= self.stall_after:
            watch.reported = True
            self._report(member, task, quiet)

    def _last_sign(self, member: Member) -> float:
        """Epoch seconds of the teammate's last sign of life: its activity record or its transcript."""
        seen = (member.last_activity or member.joined_at or 0) / 1000
        try:
            seen = max(seen, self.home.transcript_path(self.team, member.name).stat().st_mtime)
        except OSError:
            pass
        return seen

    def _nudge(self, member: Member, task: Task, quiet: float) -> None:
        text = (f"You hold task #{task.id} ({task.subject}) in progress but have shown no activity for "
                f"{quiet:.0f} s. Go on with it; if you are stuck, say so to {LEAD_NAME} with SendMessage, or "
                "update the task with TaskUpdate.")
        log.info("nudged a stalled teammate", extra={"team": self.team, "agent": member.name, "task": task.id})
        Mailbox(self.home, self.team).send(member.name, text, sender=RUNTIME_NAME, summary="are you stuck?")

    def _report(self, member: Member, task: Task, quiet: float) -> None:
        text = (f"{member.name} holds task #{task.id} ({task.subject}) in progress but has shown no activity for "
                f"{quiet:.0f} s, even after a nudge: it may be stuck; check on it (swarm logs {member.name}), "
                "give the task to someone else, or stop it")
        log.warning("stalled teammate reported", extra={"team": self.team, "agent": member.name, "task": task.id})
        Mailbox(self.home, self.team).send(LEAD_NAME, text, sender=RUNTIME_NAME, summary=f"{member.name} stalled")
