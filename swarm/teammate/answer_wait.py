"""Waiting, inside a tool call, for one answer frame in the teammate's own inbox.

Only frames ``entry_frame`` admits count (structured path, a sender that may send them,
and for the lead's answers its verified signature). A taken answer's msg_id is
recorded with the ``LeadVerifier`` so a copy of it is refused as a replay.

Only the matching entry is taken out of the inbox; everything else stays for
normal delivery (which ignores and logs late or duplicate answers).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from swarm.core.frames import entry_frame
from swarm.core.mailbox import Mailbox, delivery_key
from swarm.core.protocol import InboxEntry
from swarm.core.signing import LeadVerifier

Match = Callable[[object, InboxEntry], bool]

INTERRUPT_CHECK = 0.25
"""Seconds between checks, while waiting, that the person interrupted the turn (as ``tools/shell.py`` does)."""


def wait_for_frame(mailbox: Mailbox, agent: str, match: Match, timeout: float,
                   abort: Match | None = None, *, lead: LeadVerifier,
                   interrupt: threading.Event | None = None) -> object | None:
    """The first frame in ``agent``'s inbox for which ``match`` holds, or None.

    None comes after ``timeout`` s, or as soon as a frame satisfies ``abort``
    (that frame stays in the inbox for normal delivery), or once ``interrupt`` is set (Ctrl-C in the pane).
    """
    watcher = mailbox.watcher(agent)
    try:
        deadline = time.monotonic() + timeout
        while True:
            for entry in mailbox.pending(agent):
                frame = entry_frame(entry, lead)
                if isinstance(frame, str):
                    continue
                if match(frame, entry):
                    lead.took([delivery_key(entry)])
                    mailbox.acknowledge(agent, [delivery_key(entry)])
                    return frame
                if abort is not None and abort(frame, entry):
                    return None
            remaining = deadline - time.monotonic()
            if remaining <= 0 or (interrupt is not None and interrupt.is_set()):
                return None
            watcher.wait(remaining if interrupt is None else min(remaining, INTERRUPT_CHECK))
    finally:
        watcher.close()
