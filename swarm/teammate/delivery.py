"""Exactly-once delivery of inbox entries into a teammate's conversation.

pending -> drop what the transcript already records -> record the rest
(fsynced) -> acknowledge (prune) everything seen. A crash before the record
redelivers; a crash after it finds the record and does not run the message twice.
"""

from __future__ import annotations

from swarm.agent.transcript import Transcript
from swarm.core.mailbox import Mailbox, delivery_key
from swarm.core.protocol import InboxEntry


class Delivery:
    def __init__(self, mailbox: Mailbox, agent: str, transcript: Transcript) -> None:
        self._mailbox = mailbox
        self._agent = agent
        self._transcript = transcript
        self._seen = transcript.delivered_ids()

    def collect(self) -> list[InboxEntry]:
        """New entries, each returned once across restarts; the inbox is pruned."""
        pending = self._mailbox.pending(self._agent)
        if not pending:
            return []
        fresh = [e for e in pending if delivery_key(e) not in self._seen]
        keys = [delivery_key(e) for e in fresh]
        self._transcript.delivered(keys)
        self._seen.update(keys)
        self._mailbox.acknowledge(self._agent, [delivery_key(e) for e in pending])
        return fresh
