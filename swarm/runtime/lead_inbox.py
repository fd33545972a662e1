"""The lead's inbox: one consumer per process records what reaches the lead; everything else asks it.

A ``LeadInbox`` is the only reader of a team's lead inbox file in its process.
``collect`` takes the undelivered entries (``prune``; a process that is not
the lead's — the CLI — leaves them in place and records each once), admits
each as a frame (``entry_frame``: Claude Code teammates' unmarked frames count
only about themselves), records the requests Claude Code teammates sent in the
permission record, appends one ``LeadMessage`` per entry to ``messages`` and
tells each subscriber, in order, under one lock: two threads collecting at
once lose nothing and see one order. The coordinator's pump and a shutdown
waiting for answers share one ``LeadInbox``: whichever takes an answer, it is
recorded where the other looks (``messages``).

``pump`` waits (event-driven) for something to arrive, then collects; one
thread pumps, any may collect. ``catch_up`` is the CLI's one look.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from swarm.core.frames import (
    IdleNotification,
    PermissionRequest,
    PlanApprovalRequest,
    ShutdownApproved,
    ShutdownRejected,
    TeammateTerminated,
    entry_frame,
)
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox, delivery_key
from swarm.core.names import LEAD_NAME
from swarm.core.protocol import InboxEntry
from swarm.core.teams import TeamStore
from swarm.core.watch import ChangeWatcher
from swarm.runtime.permission_desk import ingest_requests

Listener = Callable[["LeadMessage"], None]


@dataclass
class LeadMessage:
    sender: str
    kind: str
    """message, idle, permission_request, plan_request, shutdown_approved, shutdown_rejected, terminated, frame"""
    text: str
    summary: str | None
    timestamp: str
    frame: Any = field(default=None, repr=False, compare=False)
    """The admitted frame the entry carried (None for plain text)."""


class LeadInbox:
    """The one consumer of team ``team``'s lead inbox in this process (see the module docstring)."""

    def __init__(self, home: Home, team: str, *, prune: bool = True) -> None:
        self.home = home
        self.team = team
        self.prune = prune
        """Take what is read (the lead's own process); False: leave the inbox as it is, record each entry once."""
        self.mailbox = Mailbox(home, team)
        self.messages: list[LeadMessage] = []
        """Everything recorded, oldest first; only ever appended to."""
        self._lock = threading.RLock()
        self._listeners: list[Listener] = []
        self._seen: set[str] = set()
        """Delivery keys recorded while not pruning (what is left in the inbox is not recorded twice)."""
        self._watcher: ChangeWatcher | None = None

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` with each message recorded from now on (on the collecting thread); returns the undo."""
        with self._lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def pump(self, timeout: float) -> list[LeadMessage]:
        """Wait up to ``timeout`` s for something to arrive, then ``collect``; only one thread pumps."""
        if not self.waiting():
            if self._watcher is None:
                self._watcher = self.mailbox.watcher(LEAD_NAME)
            self._watcher.wait(timeout)
        return self.collect()

    def collect(self) -> list[LeadMessage]:
        """Record what reached the lead and is not recorded yet; returns those messages (any thread)."""
        with self._lock:
            entries = self._fresh(take=self.prune)
            if not entries:
                return []
            if not self.prune:
                self._seen.update(delivery_key(e) for e in entries)
            team_file = TeamStore(self.home).get(self.team)
            senders = team_file.unmarked_senders()
            if senders:  # a Claude Code teammate keeps no permission record: its requests are recorded here
                ingest_requests(self.home, self.team, entries)
            fresh = [_message(entry, senders) for entry in entries]
            for message in fresh:
                self.messages.append(message)
                for listener in list(self._listeners):
                    listener(message)
            return fresh

    def waiting(self) -> bool:
        """Whether something reached the lead that is not recorded yet."""
        with self._lock:
            return bool(self._fresh(take=False))

    def recorded(self) -> list[LeadMessage]:
        """A copy of ``messages`` (safe to walk while another thread collects)."""
        with self._lock:
            return list(self.messages)

    def close(self) -> None:
        """Stop watching the inbox (``collect`` still works; a later ``pump`` watches again)."""
        watcher, self._watcher = self._watcher, None
        if watcher is not None:
            watcher.close()

    def _fresh(self, *, take: bool) -> list[InboxEntry]:
        """The entries not recorded yet, taken from the inbox (``take``) or read where they are."""
        if take:
            return self.mailbox.take(LEAD_NAME)
        return [e for e in self.mailbox.pending(LEAD_NAME) if delivery_key(e) not in self._seen]


def catch_up(home: Home, team: str) -> list[LeadMessage]:
    """One look at the lead's inbox by a process where nothing else consumes it (the CLI's desk commands).

    Records what Claude Code teammates asked (``swarm permissions`` lists it,
    ``swarm approve`` answers it) and leaves the inbox as it is.
    """
    inbox = LeadInbox(home, team, prune=False)
    try:
        return inbox.collect()
    finally:
        inbox.close()


def _message(entry: InboxEntry, senders: frozenset[str]) -> LeadMessage:
    frame = entry_frame(entry, unmarked_from=senders)
    message = LeadMessage(entry.sender, _kind(frame), entry.text, entry.summary, entry.timestamp,
                          frame=None if isinstance(frame, str) else frame)
    if isinstance(frame, TeammateTerminated):
        message.text = frame.message
    return message


def _kind(frame: object) -> str:
    kinds: Mapping[type, str] = {
        IdleNotification: "idle", PermissionRequest: "permission_request", PlanApprovalRequest: "plan_request",
        ShutdownApproved: "shutdown_approved", ShutdownRejected: "shutdown_rejected",
        TeammateTerminated: "terminated",
    }
    if isinstance(frame, str):
        return "message"
    return kinds.get(type(frame), "frame")
