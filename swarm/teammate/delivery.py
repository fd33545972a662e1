"""Exactly-once delivery of inbox entries into a teammate's conversation.

    pending → drop what the transcript already records → hand out (a Batch)
            → the caller records the texts *and* the keys in one fsynced
              transcript line → acknowledge (prune) everything the batch saw

A crash before the record leaves the entries in the inbox (delivered again);
a crash after it finds them recorded, in the conversation, and never runs them
twice. Nothing is pruned that is not durably in the transcript.

Before a turn, the record's fsync and then the prune (the inbox's lock and a
rewrite) run beside that turn, on the teammate's one delivery thread
(``acknowledge_beside``): the model starts as soon as the thread has taken up
the fsync, and the turn's first tool waits for it (``Conversation.make_durable``).
The prune follows the fsync at once (``PRUNE_GRACE`` 0), beside the turn; a
``Delivery`` made with a grace lets it wait until the turn is over or the
grace has passed. A grace of 50 ms used to be the default, to keep the
inbox's lock and rewrite out of a quick turn's way, but measured it did the
opposite: it put the prune on the tail of every quick turn, where it also met
the lead's next send to this inbox (bench_roundtrip, back to back, acts p50
3.3-3.5 ms with the grace, 2.6-2.8 without). The teammate waits for the prune
before it may look idle, so "idle and an empty inbox" still means done. The order is the one inline code would have: nothing is
pruned, and nothing acted on, before its record is on disk.
"""

from __future__ import annotations

import os
import queue
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

from swarm.agent.conversation import OwedSync
from swarm.agent.transcript import Transcript
from swarm.core.mailbox import Mailbox, delivery_key
from swarm.core.protocol import InboxEntry
from swarm.core.store import locate
from swarm.errors import StorageError
from swarm.teammate.delivery_worker import DeliveryWorker, Inbox, Job, WorkerUnavailable


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


PRUNE_GRACE = 0.0
"""Seconds the prune behind a turn waits for the turn to end before it runs anyway (0: it runs at once)."""
HANDOFF_WAIT = 0.002
"""Seconds the turn waits for the delivery thread to take up the fsync before it goes on regardless."""


class Pruning:
    """One batch's fsync and prune, run on the delivery thread (``Delivery.acknowledge_beside``)."""

    def __init__(self, sync: Callable[[], None] | None, prune: Callable[[], None], grace: float) -> None:
        self._sync = sync
        self._prune = prune
        self._grace = grace
        self._started = threading.Event()
        self._turn_over = threading.Event()
        self._done = threading.Event()
        self._error: BaseException | None = None

    def run(self) -> None:
        """The fsync, then (once the turn is over, or after the grace) the prune; a failed fsync prunes nothing."""
        self._started.set()
        try:
            if self._sync is not None:
                self._sync()
            self._turn_over.wait(self._grace)
            self._prune()
        except BaseException as exc:  # handed to whoever waits: a failed prune fails the teammate, as inline
            self._error = exc
        finally:
            self._done.set()

    def taken_up(self, timeout: float) -> None:
        """Until the delivery thread has started this job (or ``timeout`` passed).

        The thread needs the interpreter's lock to start, and the turn, pure
        Python until its first write, would hold it for hundreds of microseconds:
        the fsync would start that late. Waiting here hands the lock over; the
        thread soon releases it again in the fsync, which then runs beside the turn.
        """
        self._started.wait(timeout)

    def wait(self) -> None:
        """The turn is over: until the prune is done; then the error of the step that failed, if any (raised once)."""
        self.join()
        error, self._error = self._error, None
        if error is not None:
            raise error

    def join(self) -> None:
        """As ``wait``, an error left unraised (another exception is on its way)."""
        self._turn_over.set()
        self._done.wait()


class WorkerPruning:
    """A batch's fsync and prune done by the delivery worker (``swarm.teammate.delivery_worker``), followed as
    ``Pruning`` is; if the worker ended meanwhile, the teammate does what it may not have done."""

    def __init__(self, delivery: Delivery, job: Job, keys: list[str]) -> None:
        self._delivery = delivery
        self._job = job
        self._keys = keys

    def synced(self) -> None:
        """Until the record is on disk (``OwedSync.pay`` waits here)."""
        try:
            self._job.synced()
        except WorkerUnavailable:
            self._delivery.transcript.sync()

    def wait(self) -> None:
        """The turn is over: until the prune is done; the error of the step that failed, if any (raised once)."""
        try:
            self._job.pruned()
        except WorkerUnavailable:  # an fsync or a prune done twice does no harm; their order is kept
            self._delivery.transcript.sync()
            self._delivery.acknowledge_keys(self._keys)
        finally:
            self._delivery.pruned(self._keys)

    def join(self) -> None:
        """As ``wait``, an error left unraised (another exception is on its way)."""
        try:
            self.wait()
        except StorageError:
            pass


class Delivery:
    def __init__(self, mailbox: Mailbox, agent: str, transcript: Transcript, *,
                 prune_grace: float = PRUNE_GRACE, handoff_wait: float = HANDOFF_WAIT,
                 worker: DeliveryWorker | None = None) -> None:
        """``worker`` (``DeliveryWorker.fork``; this delivery closes it) does the fsync and the prune beside a
        turn, for a team whose inboxes are files; without one, or once it is gone, the delivery thread does."""
        self._mailbox = mailbox
        self.transcript = transcript
        self.prune_grace = prune_grace
        self.handoff_wait = handoff_wait
        self._agent = agent
        self._seen = transcript.delivered_ids()
        self._pruning: set[str] = set()
        """Keys a ``Pruning`` is removing now: a ``collect`` meanwhile does not prune them again."""
        self._jobs: queue.SimpleQueue[Pruning | None] | None = None
        if worker is not None and locate(mailbox.home, mailbox.team) is not None:
            worker.close()  # a database team's inbox is rows: the thread prunes on its own connection
            worker = None
        self._worker = worker
        self._last: WorkerPruning | None = None
        """The worker's latest job: followed to its end before the next is sent (its replies come in order)."""
        if worker is not None:
            weakref.finalize(self, self._worker.close)

    @property
    def worker_pid(self) -> int | None:
        """The delivery worker's pid while it runs (None: the delivery thread does the jobs)."""
        return self._worker.pid if self._worker is not None and self._worker.alive else None

    def collect(self) -> Batch:
        """New entries, each handed out once in this process; the inbox is not touched yet."""
        pending = self._mailbox.pending(self._agent)
        batch = Batch(entries=[e for e in pending if delivery_key(e) not in self._seen],
                      seen=[key for e in pending if (key := delivery_key(e)) not in self._pruning])
        self._seen.update(batch.keys)
        return batch

    def acknowledge(self, batch: Batch) -> None:
        """Prune the batch's entries; call only after they are recorded in the transcript."""
        self.acknowledge_keys(batch.seen)

    def acknowledge_keys(self, keys: list[str]) -> None:
        """Prune the entries with these delivery keys (recorded in the transcript already)."""
        if keys:
            self._mailbox.acknowledge(self._agent, keys)

    def pruned(self, keys: list[str]) -> None:
        """A prune behind a turn is over: a later ``collect`` prunes what it finds of these keys again."""
        self._pruning.difference_update(keys)

    def acknowledge_beside(self, batch: Batch, owed: OwedSync | None = None) -> Pruning | WorkerPruning:
        """``owed`` (the record's fsync), then ``acknowledge``, beside the turn; ``wait`` when the turn is over.

        By the delivery worker: the fsync is handed over to it (``OwedSync.hand_over``: ``pay`` waits
        for it). Else on the delivery thread, and this returns once the thread has started the job
        (``Pruning.taken_up``), so the fsync runs beside the turn.

        The inbox lock excludes other threads of this process too (``core.flock``),
        so a send to this teammate or a prune by the turn waits for this one.
        """
        keys = list(batch.seen)
        self._pruning.update(keys)
        if self._last is not None:
            self._last.join()  # already over unless a caller never waited for it
            self._last = None
        job = self._by_worker(keys, owed)
        if job is not None:
            beside = self._last = WorkerPruning(self, job, keys)
            if owed is not None:
                owed.hand_over(beside.synced)
            return beside

        def prune() -> None:
            try:
                self.acknowledge_keys(keys)
            finally:
                self.pruned(keys)

        pruning = Pruning(owed.pay if owed is not None else None, prune, self.prune_grace)
        self._thread_queue().put(pruning)
        pruning.taken_up(self.handoff_wait)
        return pruning

    def _by_worker(self, keys: list[str], owed: OwedSync | None) -> Job | None:
        """The job sent to the worker; None when the thread must do it (no worker, ended, too large a batch,
        or no descriptor of the record to fsync)."""
        if self._worker is None or not self._worker.alive:
            return None
        held = owed.descriptor() if owed is not None else None
        if owed is not None and held is None:
            return None
        try:
            return self._worker.submit(held, Inbox(self._mailbox.home, self._mailbox.team, self._agent), keys)
        except WorkerUnavailable:
            return None
        finally:
            if held is not None:
                os.close(held)  # the worker got its own copy

    def close(self) -> None:
        """End the delivery worker (it finishes the job at hand); the thread ends with this object."""
        if self._worker is not None:
            self._worker.close()

    def _thread_queue(self) -> queue.SimpleQueue[Pruning | None]:
        """The delivery thread's queue; the thread starts with the first job and ends with this object."""
        if self._jobs is None:
            self._jobs = queue.SimpleQueue()
            threading.Thread(target=_run_jobs, args=(self._jobs,), name="swarm-delivery", daemon=True).start()
            weakref.finalize(self, self._jobs.put, None)
        return self._jobs


def _run_jobs(jobs: queue.SimpleQueue[Pruning | None]) -> None:
    """Run jobs in order until the ``None`` that ``Delivery`` sends when it is dropped."""
    while True:
        job = jobs.get()
        if job is None:
            return
        job.run()
        del job  # it refers to the Delivery (its prune): holding it here would keep that alive
