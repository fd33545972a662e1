"""The watchdog: a teammate that holds a task in progress but has done nothing for a while is nudged, then reported.

``--stall-after SECONDS`` (``swarm run``, ``swarm up``) or ``stall_after`` in
a team file's ``[team]``. Whoever coordinates the team checks now and then
(``LeadPump.pump``, at most every ``CHECK_EVERY`` seconds): a running
teammate that owns an ``in_progress`` task and whose last sign of life —
a turn starting or ending (its activity record) or a line in its transcript
(each model reply, each tool result) — is ``stall_after`` seconds old gets
one nudge in its inbox, from the runtime. If, ``stall_after`` after the
nudge, there is still nothing (a turn stuck in one call, a teammate that
went quiet again), the lead is told, once per teammate and task, and the
``on_reported`` callback hears it too (the lead's ``Notification`` hooks,
``notification_type: "teammate_stalled"``).

A call stuck past its own timeout: each check also reads every running
teammate's live events (``agent/live_events.py``, incrementally). A tool call
whose ``tool_start`` declared a time limit (``timeout_s``: Bash's
``timeout``) and that has no ``tool_end`` ``overtime_grace`` seconds after
that limit — the tool's own timeout did not end it — is interrupted the way
a person's Ctrl-C in its pane would (``runtime/interrupt.py``: the turn ends
``interrupted``, the command is killed, the teammate stays), once per call,
and the lead is told. A call waiting on an answer (a permission or plan
request) is left alone: it waits for someone, it is not stuck.

What was nudged lives in this object: a coordinator started anew (a lead
resumed) may nudge once more.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from swarm.agent.live_events import EventReader, LiveEvent
from swarm.core.clock import iso_to_epoch
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.names import LEAD_NAME, RUNTIME_NAME
from swarm.core.protocol import Member, Task
from swarm.core.tasks import TaskStore
from swarm.core.teams import TeamStore
from swarm.errors import SwarmError
from swarm.runtime.interrupt import interrupt_turn
from swarm.runtime.member_kinds import Machine, member_kind

log = logging.getLogger(__name__)

CHECK_EVERY = 5.0
"""Seconds between two checks at most (a short ``stall_after`` checks more often)."""
OVERTIME_GRACE = 15.0
"""Seconds past a call's own timeout before the watchdog interrupts it (the tool normally ends it itself)."""


@dataclass
class _Watch:
    nudged_at: float
    reported: bool = False


@dataclass
class _Calls:
    """One teammate's tool calls in flight, as its live events tell them."""

    reader: EventReader
    open: dict[int, tuple[str, float, float]] = field(default_factory=dict)
    """Call number → (tool, epoch seconds it started, its own timeout in seconds)."""
    asking: set[str] = field(default_factory=set)
    """Requests it waits on (their ids)."""

    def take(self, event: LiveEvent, since: float) -> None:
        if event.type == "tool_start" and event.number is not None and event.timeout_s:
            started = iso_to_epoch(event.ts)
            if started is not None and started >= since:  # not a call an earlier process of it left open
                self.open[event.number] = (event.tool or "", started, event.timeout_s)
        elif event.type == "tool_end" and event.number is not None:
            self.open.pop(event.number, None)
        elif event.type == "request" and event.request_id:
            self.asking.add(event.request_id)
        elif event.type == "answered" and event.request_id:
            self.asking.discard(event.request_id)
        elif event.type == "turn_end" or (event.type == "state" and event.state != "busy"):
            self.open.clear()
            self.asking.clear()


@dataclass
class Watchdog:
    home: Home
    team: str
    stall_after: float
    clock: Callable[[], float] = time.time
    on_reported: Callable[[str, str], None] | None = None
    """Hears each report to the lead (teammate, text): the lead's ``Notification`` hooks."""
    overtime_grace: float = OVERTIME_GRACE
    _watches: dict[tuple[str, int, str], _Watch] = field(default_factory=dict)
    _calls: dict[str, _Calls] = field(default_factory=dict)
    _interrupted: set[tuple[str, int, int]] = field(default_factory=set)
    _next: float = 0.0

    def check(self) -> None:
        """Nudge or report each stalled teammate, interrupt a call stuck past its timeout (nothing when checked
        less than a moment ago)."""
        now = self.clock()
        if now < self._next:
            return
        self._next = now + min(CHECK_EVERY, self.stall_after / 4)
        try:
            tasks = [t for t in TaskStore(self.home, self.team).list() if t.status == "in_progress" and t.owner]
            members = {m.name: m for m in TeamStore(self.home).get(self.team).members if m.name != LEAD_NAME}
        except SwarmError as exc:  # the team may be going away under us; the next check tries again
            log.warning("watchdog check skipped", extra={"team": self.team, "error": str(exc)})
            return
        machine = Machine({}, self.home)
        running = {name: m for name, m in members.items() if member_kind(m, machine).running()}
        for member in running.values():
            self._overtime(member, now)
        for task in tasks:
            member = running.get(task.owner or "")
            if member is not None:
                self._judge(member, task, now)

    def close(self) -> None:
        for calls in self._calls.values():
            calls.reader.close()
        self._calls.clear()

    def _overtime(self, member: Member, now: float) -> None:
        """Interrupt ``member``'s tool call that ran past its own timeout (once per call)."""
        calls = self._calls.get(member.name)
        try:
            if calls is None:
                calls = self._calls[member.name] = _Calls(EventReader(self.home.events_path(self.team, member.name)))
                fresh = calls.reader.history()
            else:
                fresh = calls.reader.read()
        except SwarmError as exc:
            log.warning("watchdog cannot read a teammate's events", extra={"agent": member.name, "error": str(exc)})
            return
        for event in fresh:
            calls.take(event, (member.joined_at or 0) / 1000)
        if calls.asking:
            return
        for number, (tool, started, limit) in list(calls.open.items()):
            key = (member.name, member.joined_at, number)
            if now - started < limit + self.overtime_grace or key in self._interrupted:
                continue
            self._interrupted.add(key)
            try:
                reached = interrupt_turn(self.home, self.team, member.name)
            except SwarmError as exc:
                log.warning("stuck call not interrupted", extra={"agent": member.name, "error": str(exc)})
                continue
            if reached:
                self._tell_overtime(member, number, tool, now - started, limit)

    def _tell_overtime(self, member: Member, number: int, tool: str, ran: float, limit: float) -> None:
        text = (f"{member.name}'s call [{number}] {tool} ran {ran:.0f} s, past its own {limit:.0f} s timeout: "
                f"the watchdog interrupted its turn as a Ctrl-C in its pane would; it stays, and waits for its "
                f"next message (swarm logs {member.name})")
        log.warning("stuck call interrupted", extra={"team": self.team, "agent": member.name, "call": number})
        Mailbox(self.home, self.team).send(LEAD_NAME, text, sender=RUNTIME_NAME,
                                           summary=f"{member.name} interrupted")

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
        if self.on_reported is not None:
            try:
                self.on_reported(member.name, text)
            except Exception as exc:  # noqa: BLE001 -- a hook's failure must not stop the coordinator
                log.warning("stalled-teammate hooks failed", extra={"agent": member.name, "error": str(exc)})
