"""The delivery worker: a forked process does the record's fsync, then the prune, beside the turn.

Real inbox files in a fresh home, a real forked worker, real signals. What a
worker must never do is prune before the fsync it was given succeeded, leave
the teammate waiting when it dies, take a pane's Ctrl-C, or hold the
teammate's files once it has ended.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from swarm.agent.conversation import Conversation, OwedSync
from swarm.agent.transcript import Transcript
from swarm.core.home import Home
from swarm.core.jsonfile import lock_of
from swarm.core.mailbox import Mailbox, delivery_key
from swarm.core.protocol import Member
from swarm.core.teams import TeamStore
from swarm.errors import StorageError
from swarm.models.messages import Message
from swarm.teammate.delivery import Batch, Delivery, WorkerPruning
from swarm.teammate import delivery_worker
from swarm.teammate.delivery_worker import COMM, DeliveryWorker, Inbox
from tests.backends.helpers import retry_until
from tests.conftest import both_stores


@pytest.fixture
def mailbox(home: Home) -> Mailbox:
    TeamStore(home).create("t")
    TeamStore(home).add_member("t", Member(agent_id="w@t", name="w", is_active=True))
    mailbox = Mailbox(home, "t")
    mailbox.send("w", "ping", sender="team-lead")
    return mailbox


@pytest.fixture
def delivery(home: Home, mailbox: Mailbox, tmp_path: Path) -> Iterator[Delivery]:
    delivery = Delivery(mailbox, "w", Transcript(tmp_path / "w.jsonl"), worker=DeliveryWorker.fork())
    yield delivery
    delivery.close()


def _texts(mailbox: Mailbox) -> list[str]:
    return [e.text for e in mailbox.read("w")]


def _recorded(delivery: Delivery) -> tuple[Batch, Conversation, OwedSync]:
    """A batch and its record, written as the session writes it: its fsync owed."""
    batch = delivery.collect()
    conversation = Conversation(transcript=delivery.transcript)
    owed = conversation.add(Message.user_text("ping"), delivered=batch.keys, sync_later=True)
    assert owed is not None
    return batch, conversation, owed


def _delivery_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "swarm-delivery"}


def test_the_fsync_and_the_prune_run_in_a_process_of_its_own(mailbox: Mailbox, delivery: Delivery) -> None:
    threads = _delivery_threads()
    worker = psutil.Process(delivery.worker_pid)
    assert worker.ppid() == os.getpid() and worker.name() == COMM.decode()
    batch, conversation, owed = _recorded(delivery)
    pruning = delivery.acknowledge_beside(batch, owed)
    assert isinstance(pruning, WorkerPruning)
    conversation.make_durable()  # the worker's "synced"
    pruning.wait()
    assert _texts(mailbox) == []
    assert _delivery_threads() == threads  # no thread was needed
    mailbox.send("w", "ping 2", sender="team-lead")
    delivery.acknowledge_beside(delivery.collect()).wait()  # the same worker, job after job
    assert _texts(mailbox) == [] and delivery.worker_pid == worker.pid


def test_a_refused_fsync_prunes_nothing(mailbox: Mailbox) -> None:
    """The worker fsyncs the descriptor it is given: a pipe refuses (EINVAL), as a failing disk would."""
    worker = DeliveryWorker.fork()
    assert worker is not None
    read_end, write_end = os.pipe()
    try:
        [key] = [delivery_key(e) for e in mailbox.pending("w")]
        job = worker.submit(read_end, Inbox(mailbox.home, "t", "w"), [key])
        with pytest.raises(StorageError, match="cannot sync the transcript"):
            job.synced()
        with pytest.raises(StorageError, match="cannot sync the transcript"):
            job.synced()  # as OwedSync.pay: each time
        with pytest.raises(StorageError):
            job.pruned()
        job.pruned()  # the prune's wait raises it once
        assert _texts(mailbox) == ["ping"]  # still there, to be delivered again
    finally:
        os.close(read_end)
        os.close(write_end)
        worker.close()


def test_a_worker_killed_mid_job_is_stood_in_for(home: Home, mailbox: Mailbox, delivery: Delivery,
                                                caplog: pytest.LogCaptureFixture) -> None:
    batch, conversation, owed = _recorded(delivery)
    pid = delivery.worker_pid
    assert pid is not None
    with lock_of(home.inbox_path("t", "w")):  # the worker's prune waits for this lock...
        pruning = delivery.acknowledge_beside(batch, owed)
        conversation.make_durable()  # ...after its fsync
        os.kill(pid, signal.SIGKILL)
        retry_until(lambda: os.waitpid(pid, os.WNOHANG) != (0, 0), 5, what="the worker to die")
    assert _texts(mailbox) == ["ping"]
    pruning.wait()  # the teammate does the job itself
    assert _texts(mailbox) == []
    assert "the delivery worker ended" in caplog.text  # said, once: a worker that dies is a bug to look into
    assert delivery.worker_pid is None
    mailbox.send("w", "ping 2", sender="team-lead")
    threads = _delivery_threads()
    delivery.acknowledge_beside(delivery.collect()).wait()  # from now on, the thread
    assert _texts(mailbox) == [] and len(_delivery_threads() - threads) <= 1


def test_a_worker_that_fails_says_why_before_it_ends(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Its own bug (here a job that is no JSON) is logged where the teammate logs, and the teammate is told it
    ended: a worker once died at every first job of a pane's teammate and nothing said so."""
    log_file = tmp_path / "teammate.log"
    handler = logging.FileHandler(log_file)  # the teammate's log, as set up before the worker is forked
    logging.getLogger().addHandler(handler)
    try:
        worker = DeliveryWorker.fork()
        assert worker is not None
        try:
            worker._sock.send(b"no json")  # noqa: SLF001 - what a bug in the worker's own code would meet
            with pytest.raises(delivery_worker.WorkerUnavailable):
                worker.reply()
        finally:
            worker.close()
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()
    written = log_file.read_text()
    assert "the delivery worker failed" in written and "JSONDecodeError" in written
    assert "the delivery worker ended" in caplog.text


def test_a_worker_that_stops_answering_is_let_go(mailbox: Mailbox, delivery: Delivery,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Stopped (SIGSTOP) with a job in hand, it would hold up the turn for good: after ``REPLY_WAIT`` the teammate
    does the job itself, and every later job goes to the thread, none waiting on the stopped worker again."""
    monkeypatch.setattr(delivery_worker, "REPLY_WAIT", 0.5)
    pid = delivery.worker_pid
    assert pid is not None
    batch, conversation, owed = _recorded(delivery)
    os.kill(pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        pruning = delivery.acknowledge_beside(batch, owed)
        conversation.make_durable()  # the turn's first tool: waits for the fsync the stopped worker never does
        pruning.wait()
        assert _texts(mailbox) == [] and time.monotonic() - started < 5
        assert delivery.worker_pid is None
        mailbox.send("w", "ping 2", sender="team-lead")
        started = time.monotonic()
        delivery.acknowledge_beside(delivery.collect()).wait()
        assert _texts(mailbox) == [] and time.monotonic() - started < 0.5  # the thread, not another wait
    finally:
        os.kill(pid, signal.SIGCONT)


def test_the_worker_leaves_a_panes_signals_to_the_teammate(mailbox: Mailbox, delivery: Delivery) -> None:
    worker = psutil.Process(delivery.worker_pid)
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGTSTP):
        os.kill(worker.pid, signum)
    delivery.acknowledge_beside(delivery.collect()).wait()
    assert _texts(mailbox) == []
    assert worker.is_running() and worker.status() != psutil.STATUS_STOPPED
    delivery.close()  # its socket closed: it ends, and is reaped
    assert not psutil.pid_exists(worker.pid) or worker.status() != psutil.STATUS_ZOMBIE
    with pytest.raises(psutil.NoSuchProcess):
        worker.status()


def test_the_worker_holds_none_of_the_teammates_files(home: Home, mailbox: Mailbox, tmp_path: Path) -> None:
    transcript = Transcript(tmp_path / "w.jsonl")
    transcript.event("opened")  # the teammate holds its transcript open when the worker is forked
    kept = open(tmp_path / "held", "w")  # noqa: SIM115 (held open across the fork on purpose)
    delivery = Delivery(mailbox, "w", transcript, worker=DeliveryWorker.fork())
    try:
        pid = delivery.worker_pid
        fd_dir = Path(f"/proc/{pid}/fd")
        targets = [os.readlink(fd_dir / name) for name in os.listdir(fd_dir)]
        assert not [t for t in targets if t.startswith(str(tmp_path))], targets
        assert len([t for t in targets if t.startswith("socket:")]) == 1  # its own, to the teammate
    finally:
        kept.close()
        delivery.close()


def test_a_batch_too_large_for_a_job_goes_to_the_thread(mailbox: Mailbox, delivery: Delivery,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(delivery_worker, "MAX_JOB", 100)  # a job's limit, lowered: not 2,000 sends
    for n in range(3):  # four keys of 36 characters and more
        mailbox.send("w", f"ping {n}", sender="team-lead")
    pruning = delivery.acknowledge_beside(delivery.collect())
    assert not isinstance(pruning, WorkerPruning)
    pruning.wait()
    assert _texts(mailbox) == []
    assert delivery.worker_pid is not None  # the worker stays for the next, ordinary batch


@both_stores
def test_only_a_team_in_files_has_a_worker(home: Home, tmp_path: Path, team_store: str | None) -> None:
    """A database team's inbox is rows: the thread prunes on its own connection, and the worker is let go."""
    TeamStore(home).create("s", store=team_store)
    TeamStore(home).add_member("s", Member(agent_id="w@s", name="w", is_active=True))
    mailbox = Mailbox(home, "s")
    mailbox.send("w", "ping", sender="team-lead")
    worker = DeliveryWorker.fork()
    assert worker is not None
    delivery = Delivery(mailbox, "w", Transcript(tmp_path / "w.jsonl"), worker=worker)
    try:
        pruning = delivery.acknowledge_beside(delivery.collect())
        assert isinstance(pruning, WorkerPruning) == (team_store is None)
        pruning.wait()
        assert mailbox.read("w") == []
        if team_store is not None:
            assert delivery.worker_pid is None
            with pytest.raises(ChildProcessError):
                os.waitpid(worker.pid, os.WNOHANG)  # ended and reaped
    finally:
        delivery.close()


def test_a_job_nobody_waited_for_is_followed_to_its_end_before_the_next(mailbox: Mailbox, delivery: Delivery,
                                                                         tmp_path: Path) -> None:
    """The worker's replies come in order: the next job must not read the last one's (here, its failure)."""
    read_end, write_end = os.pipe()

    class Refused(OwedSync):  # its record's descriptor is a pipe: the worker's fsync is refused
        def descriptor(self) -> int | None:
            return os.dup(read_end)

    try:
        delivery.acknowledge_beside(delivery.collect(), Refused(Transcript(tmp_path / "r.jsonl")))  # not waited for
        mailbox.send("w", "ping 2", sender="team-lead")
        second = delivery.acknowledge_beside(delivery.collect())
        second.wait()  # the first job's failure is not taken for this one's
        assert [e.text for e in mailbox.read("w")] == ["ping"]  # the refused job pruned nothing; the second did
    finally:
        os.close(read_end)
        os.close(write_end)
