"""The lead's side of a running team: read what reaches the lead, answer requests, know when work is done.

One ``LeadPump.pump`` call: wait (event-driven) on the lead's inbox and
record what arrived (its ``LeadInbox``, the one consumer of that file in this
process), answer each open request (the lead policy first, then the person —
or, headless, a denial), and notice teammates that died. What it knows of the
teammates (``idle_seen``, ``results``, ``failures``) it learns as a subscriber
of its ``LeadInbox``, so a message another thread collected through it (a
shutdown waiting for answers) counts the same.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol

from swarm.core.frames import IdleNotification
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.names import LEAD_NAME
from swarm.core.permlog import PermissionEvent, PermissionLog
from swarm.core.protocol import Member, TeamFile
from swarm.core.teams import TeamStore
from swarm.errors import ConflictError
from swarm.runtime.permission_desk import answer_by_policy, answer_plan, approve, deny
from swarm.runtime.lead_inbox import LeadInbox, LeadMessage
from swarm.runtime.member_kinds import reap_dead
from swarm.runtime.restart import restart_ended
from swarm.runtime.watchdog import Watchdog

log = logging.getLogger(__name__)

Answer = Literal["approve", "always", "deny"]


class Asker(Protocol):
    """Asks a person; used by the foreground ``swarm up``."""

    def permission(self, request: PermissionEvent) -> Answer: ...

    def plan(self, request: PermissionEvent) -> tuple[bool, str | None]: ...


@dataclass
class LeadPump:
    home: Home
    team: str
    asker: Asker | None = None
    """None: nobody to ask (headless) — requests the policy does not answer are denied."""
    plans_by_model: bool = False
    """Plan approvals are the lead model's to answer (SendMessage): leave them pending here."""
    on_request: Callable[[PermissionEvent], None] | None = None
    """A person answers elsewhere (the interactive session): requests the policy leaves open stay
    pending and are handed here (every pump, until answered); ``asker`` is not used."""
    on_message: Callable[[LeadMessage], None] = lambda m: None
    on_decision: Callable[[PermissionEvent], None] = lambda d: None
    env: Mapping[str, str] | None = None
    """The environment teammates are started again with (restart policies); None: nobody is restarted here."""
    stall_after: float | None = None
    """Seconds a teammate holding a task in progress may do nothing before it is nudged (``runtime.watchdog``)."""
    on_stalled: Callable[[str, str], None] | None = None
    """Hears each stalled teammate reported to the lead (name, text): the lead's ``Notification`` hooks."""
    results: dict[str, str] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    idle_seen: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.mailbox = Mailbox(self.home, self.team)
        self.permlog = PermissionLog(self.home, self.team)
        self.inbox = LeadInbox(self.home, self.team)
        """The one consumer of the lead's inbox in this process; a shutdown run here waits on it too."""
        self.inbox.subscribe(self._saw)
        self.watchdog = (Watchdog(self.home, self.team, self.stall_after, on_reported=self.on_stalled)
                         if self.stall_after else None)

    @property
    def messages(self) -> list[LeadMessage]:
        """Everything that reached the lead, oldest first (recorded by ``inbox``, whoever collected it)."""
        return self.inbox.messages

    def close(self) -> None:
        self.inbox.close()
        if self.watchdog is not None:
            self.watchdog.close()

    def pump(self, timeout: float) -> None:
        """Handle everything that reached the lead, waiting up to ``timeout`` s for something to arrive."""
        self.inbox.pump(timeout)
        self._answer_pending()
        reap_dead(self.home, self.team)
        if self.env is not None:
            restart_ended(self.home, self.team, self.env)
        if self.watchdog is not None:
            self.watchdog.check()

    def _saw(self, message: LeadMessage) -> None:
        """One message the inbox recorded (on the thread that collected it): what it says of its sender."""
        frame = message.frame
        if isinstance(frame, IdleNotification):
            self.idle_seen.add(frame.sender)
            if frame.result is not None:
                self.results[frame.sender] = frame.result
            if frame.idle_reason == "failed":
                self.failures[frame.sender] = frame.failure_reason or "failed"
        self.on_message(message)

    def _answer_pending(self) -> None:
        for request in self.permlog.pending():
            if self.plans_by_model and request.kind == "plan":
                continue
            try:
                self._answer(request)
            except ConflictError:  # answered meanwhile (a timeout, another lead)
                continue

    def _answer(self, request: PermissionEvent) -> None:
        """The policy first (the request may be newer than the last policy pass), then the person or a denial."""
        decision = answer_by_policy(self.home, self.team, request)
        if decision is not None:
            self.on_decision(decision)
            return
        if self.on_request is not None:
            self.on_request(request)
            return
        if self.asker is None:
            decision = (deny(self.home, self.team, request.request_id, by="headless",
                             reason="headless run: the lead policy does not allow this")
                        if request.kind == "permission" else
                        answer_plan(self.home, self.team, request.request_id, approved=False, by="headless",
                                    feedback="headless run: plans need `plans = \"approve\"` in the lead policy"))
        elif request.kind == "plan":
            approved, feedback = self.asker.plan(request)
            decision = answer_plan(self.home, self.team, request.request_id, approved=approved, feedback=feedback)
        else:
            answer = self.asker.permission(request)
            decision = (deny(self.home, self.team, request.request_id) if answer == "deny" else
                        approve(self.home, self.team, request.request_id, always=answer == "always"))
        self.on_decision(decision)

    def settled(self) -> bool:
        """Every live teammate has finished a turn, is idle, has nothing queued and no open request.

        Read twice, and settled only if both readings agree. Within a reading the
        inboxes come before the statuses: a teammate marks itself busy before it
        prunes what it took, so an inbox seen empty because it was just taken is
        followed by a status that shows the turn. Between two readings any turn
        changes the activity record (busy, then idle with a new time and tokens).
        """
        first = self._reading()
        return first is not None and self._reading() == first

    def _reading(self) -> tuple[tuple[object, ...], ...] | None:
        """What every live teammate is doing, or None while anything is pending or anyone works."""
        if self.permlog.pending() or self.inbox.waiting():
            return None
        if any(self.mailbox.pending(m.name) for m in self._teammates(TeamStore(self.home).read_file(self.team))):
            return None  # the inboxes first ...
        reading = []
        for member in self._teammates(TeamStore(self.home).get(self.team)):  # ... then what each says it does
            if member.name not in self.idle_seen or not member.idle():
                return None
            reading.append((member.name, member.status, member.is_active, member.last_activity, member.tokens))
        return tuple(reading)

    @staticmethod
    def _teammates(team: TeamFile) -> list[Member]:
        return [m for m in team.members if m.name != LEAD_NAME and m.present()]

