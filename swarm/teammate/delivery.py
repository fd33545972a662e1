"""Exactly-once delivery of inbox entries into a teammate's conversation.

    pending → drop what the transcript already records → hand out (a Batch)
            → the caller records the texts *and* the keys in one fsynced
              transcript line → acknowledge (prune) everything the batch saw

A crash before the record leaves the entries in the inbox (delivered again);
a crash after it finds them recorded, in the conversation, and never runs them
twice. Nothing is pruned that is not durably in the transcript.

The prune before a turn (the inbox's lock and a rewrite: the longest step
between a message and the turn that answers it) runs beside that turn on a
thread of its own (``acknowledge_beside``); the teammate waits for it before it
may look idle, so "idle and an empty inbox" still means done.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
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


class Pruning:
    """A prune running on its own thread (``Delivery.acknowledge_beside``)."""

    def __init__(self, prune: Callable[[], None]) -> None:
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(prune,), name="swarm-prune", daemon=True)
        self._thread.start()

    def _run(self, prune: Callable[[], None]) -> None:
        try:
            prune()
        except BaseException as exc:  # handed to whoever waits: a failed prune fails the teammate, as inline
            self._error = exc

    def wait(self) -> None:
        """Until the prune is done; then its error, if it failed (raised once)."""
        self._thread.join()
        error, self._error = self._error, None
        if error is not None:
            raise error

    def join(self) -> None:
        """Until the prune is done, its error left unraised (another exception is on its way)."""
        self._thread.join()


class Delivery:
    def __init__(self, mailbox: Mailbox, agent: str, transcript: Transcript) -> None:
        self._mailbox = mailbox
        self._agent = agent
        self._seen = transcript.delivered_ids()
        self._pruning: set[str] = set()
        """Keys a ``Pruning`` is removing now: a ``collect`` meanwhile does not prune them again."""

    def collect(self) -> Batch:
        """New entries, each handed out once in this process; the inbox is not touched yet."""
        pending = self._mailbox.pending(self._agent)
        batch = Batch(entries=[e for e in pending if delivery_key(e) not in self._seen],
                      seen=[key for e in pending if (key := delivery_key(e)) not in self._pruning])
        self._seen.update(batch.keys)
        return batch

    def acknowledge(self, batch: Batch) -> None:
        """Prune the batch's entries; call only after they are recorded in the transcript."""
        if batch.seen:
            self._mailbox.acknowledge(self._agent, batch.seen)

    def acknowledge_beside(self, batch: Batch) -> Pruning:
        """``acknowledge`` on a thread of its own, so the turn that follows starts now; ``wait`` before idle.

        The inbox lock excludes other threads of this process too (``core.flock``),
        so a send to this teammate or a prune by the turn waits for this one.
        """
        keys = list(batch.seen)
        self._pruning.update(keys)

        def prune() -> None:
            try:
                if keys:
                    self._mailbox.acknowledge(self._agent, keys)
            finally:
                self._pruning.difference_update(keys)

        return Pruning(prune)
