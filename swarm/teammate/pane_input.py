"""The person typing in a teammate's pane: each line is a message from the person, as ``swarm send`` writes it.

A line typed in the pane goes into this teammate's own inbox as an entry from
``team-lead`` marked ``author: "person"`` (``Mailbox.send``: signed as the
lead's, and as the person's words for this teammate, ``core/signing.py``) —
exactly what ``swarm send NAME TEXT`` from the person's shell writes. It is
then delivered like every other message (the inbox watcher wakes the
teammate; a busy teammate reads it at its next model call), and it carries the
person's authority for person-only skills (``LeadVerifier.by_person``), never
the lead model's. Ctrl-C in the pane interrupts the running turn
(``TeammateSession.interrupt``, from the SIGINT handler), not the teammate —
the same SIGINT swarm sends from elsewhere (``runtime/interrupt.py``).
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import TextIO

from swarm.agent.live_events import LiveEvent
from swarm.core.mailbox import Mailbox
from swarm.core.names import LEAD_NAME
from swarm.errors import SwarmError
from swarm.teammate.live import TeammateLive

log = logging.getLogger(__name__)


class PaneInput:
    """Reads the pane's lines on a thread of its own until the pane's input ends."""

    def __init__(self, mailbox: Mailbox, name: str, live: TeammateLive, stream: TextIO | None = None) -> None:
        self.mailbox = mailbox
        self.name = name
        self.live = live
        self.stream = stream or sys.stdin

    def start(self) -> None:
        threading.Thread(target=self._read, name="pane-input", daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                line = self.stream.readline()
            except (OSError, ValueError):
                return
            if not line:
                return  # the pane's input ended
            self.typed(line.rstrip("\n"))

    def typed(self, text: str) -> None:
        """One line from the person: into this teammate's inbox as the person's message (blank lines are not).

        Shown before it is sent: once sent, the turn it starts may show its first lines before this thread runs
        again, and the person's line must come above them (a failed send says so right under it)."""
        if not text.strip():
            return
        self.live.emit(LiveEvent(type="you", text=text))
        try:
            self.mailbox.send(self.name, text, sender=LEAD_NAME, author="person")
        except SwarmError as exc:
            self.live.emit(LiveEvent(type="warning", text=f"not sent: {exc}"))
