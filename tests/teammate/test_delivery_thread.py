"""The delivery thread: the record's fsync first, then the prune (at once by default, or after a grace).

Real inbox files in a fresh home. The prune behind a turn is bookkeeping: it
never runs after a refused fsync (the entry stays, to be delivered again);
given a grace it waits for the turn to end, and it runs anyway once the grace
is over (so a long turn shows its message taken).
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from swarm.agent.conversation import OwedSync
from swarm.agent.transcript import Transcript
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.core.teams import TeamStore
from swarm.errors import StorageError
from swarm.teammate.delivery import Delivery
from tests.backends.helpers import retry_until


def _setup(home: Home, tmp_path: Path, grace: float, handoff: float = 0.002) -> tuple[Mailbox, Delivery]:
    TeamStore(home).create("t")
    TeamStore(home).add_member("t", Member(agent_id="w@t", name="w", is_active=True))
    mailbox = Mailbox(home, "t")
    mailbox.send("w", "ping", sender="team-lead")
    return mailbox, Delivery(mailbox, "w", Transcript(tmp_path / "w.jsonl"), prune_grace=grace,
                             handoff_wait=handoff)


def _owed(tmp_path: Path, sync: Callable[[], None]) -> OwedSync:
    """The record's fsync, done by ``sync``: the test decides when it returns, and whether it fails."""
    owed = OwedSync(Transcript(tmp_path / "w.jsonl"))
    owed.hand_over(sync)
    return owed


def _texts(mailbox: Mailbox) -> list[str]:
    return [e.text for e in mailbox.read("w")]


def test_the_prune_waits_for_the_turn_to_end(home: Home, tmp_path: Path) -> None:
    mailbox, delivery = _setup(home, tmp_path, grace=60)
    batch = delivery.collect()
    synced = threading.Event()
    pruning = delivery.acknowledge_beside(batch, _owed(tmp_path, synced.set))
    assert synced.wait(5)  # the fsync ran at once, on the delivery thread...
    time.sleep(0.3)
    assert _texts(mailbox) == ["ping"]  # ...the prune waits while the turn goes on
    assert delivery.collect().seen == []  # a collect during the turn does not prune it a second time
    pruning.wait()  # the turn is over
    assert _texts(mailbox) == []


def test_the_turn_goes_on_only_once_the_thread_has_taken_up_the_fsync(home: Home, tmp_path: Path) -> None:
    """Else the fsync would start only when the turn first lets go of the interpreter, hundreds of µs later."""
    mailbox, delivery = _setup(home, tmp_path, grace=0, handoff=30)
    started, finish = threading.Event(), threading.Event()

    def slow_fsync() -> None:
        started.set()
        finish.wait(30)

    pruning = delivery.acknowledge_beside(delivery.collect(), _owed(tmp_path, slow_fsync))
    assert started.is_set()  # no wait of the test's own: the handoff returned only after the thread took the job
    assert _texts(mailbox) == ["ping"]  # and the prune still follows the fsync
    finish.set()
    pruning.wait()
    assert _texts(mailbox) == []


def test_the_prune_runs_once_the_grace_is_over(home: Home, tmp_path: Path) -> None:
    mailbox, delivery = _setup(home, tmp_path, grace=0.05)
    pruning = delivery.acknowledge_beside(delivery.collect())
    retry_until(lambda: _texts(mailbox) == [], 5, what="the prune after its grace, the turn still running")
    pruning.wait()
    assert _texts(mailbox) == []


def test_a_refused_fsync_prunes_nothing(home: Home, tmp_path: Path) -> None:
    mailbox, delivery = _setup(home, tmp_path, grace=0)

    def refuse() -> None:
        raise StorageError("cannot sync w.jsonl: the disk is full")

    pruning = delivery.acknowledge_beside(delivery.collect(), _owed(tmp_path, refuse))
    with pytest.raises(StorageError, match="disk is full"):
        pruning.wait()
    assert _texts(mailbox) == ["ping"]  # still there, to be delivered again
    pruning.wait()  # the error is raised once
    pruning.join()


def _delivery_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "swarm-delivery"}


def test_one_thread_serves_every_turn_and_ends_with_its_delivery(home: Home, tmp_path: Path) -> None:
    mailbox, delivery = _setup(home, tmp_path, grace=0)
    before = _delivery_threads()  # other tests' threads may end meanwhile: only this one's is followed
    delivery.acknowledge_beside(delivery.collect()).wait()
    [thread] = _delivery_threads() - before
    for n in range(5):
        mailbox.send("w", f"ping {n}", sender="team-lead")
        delivery.acknowledge_beside(delivery.collect()).wait()
    assert _texts(mailbox) == []
    assert _delivery_threads() - before == {thread}
    del delivery
    gc.collect()
    thread.join(5)
    assert not thread.is_alive()  # the dropped delivery's thread ended
