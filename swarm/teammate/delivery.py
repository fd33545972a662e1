"""Exactly-once delivery of inbox entries into a teammate's conversation.

    pending → drop what the transcript already records → hand out (a Batch)
            → the caller records the texts *and* the keys in one fsynced
              transcript line → acknowledge (prune) everything the batch saw

A crash before the record leaves the entries in the inbox (delivered again);
a crash after it finds them recorded, in the conversation, and never runs them
twice. Nothing is pruned that is not durably in the transcript.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from swarm.agent.transcript import Transcript
from swarm.core.mailbox import Mailbox, delivery_key
from swarm.core.protocol import InboxEntry


@dataclass
class Batch:
    """Entries handed out by one ``collect``."""

    entries: list[InboxEntry] = field(default_factory=list)
    """The ones not delivered before, oldest first."""
    seen: list[str] = field(default_factory=list)
    """Keys of every pending entry the batch looked at (fresh and already recorded), to prune."""

    @property
    def keys(self) -> list[str]:
        """Keys of ``entries``: what the caller records as delivered."""
        return [delivery_key(e) for e in self.entries]


class Delivery:
    def __init__(self, mailbox: Mailbox, agent: str, transcript: Transcript) -> None:
        self._mailbox = mailbox
        self._agent = agent
        self._seen = transcript.delivered_ids()

    def collect(self) -> Batch:
        """New entries, each handed out once in this process; the inbox is not touched yet."""
        pending = self._mailbox.pending(self._agent)
        batch = Batch(entries=[e for e in pending if delivery_key(e) not in self._seen],
                      seen=[delivery_key(e) for e in pending])
        self._seen.update(batch.keys)
        return batch

    def acknowledge(self, batch: Batch) -> None:
        """Prune the batch's entries; call only after they are recorded in the transcript."""
        if batch.seen:
            self._mailbox.acknowledge(self._agent, batch.seen)
