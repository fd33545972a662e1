"""Group commit (``swarm.core.spool``): one rewrite for a batch, and nothing lost or doubled by a fault.

- Appenders that queue behind a held lock are committed by one rewrite.
- A holder SIGKILLed after its rewrite, before deleting its claims: the next
  holder does not append those entries a second time.
- A wait that runs out takes the entry back: the caller hears "not sent" and
  the entry never arrives later.
- A rewrite the disk refuses gives the other appenders' entries back to the
  spool (they are committed later) and withdraws the caller's own.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from swarm.core.document_codecs import InboxAppendCodec, InboxCodec
from swarm.core.home import Home
from swarm.core.jsonfile import LockedJsonFile
from swarm.core.mailbox import Mailbox
from swarm.core.spool import BLIND_TRY, SpooledAppend, spool_dir
from swarm.errors import LockBusyError, LockTimeoutError, StorageError
from tests.core.test_durability import _file_size_limit

if TYPE_CHECKING:
    from conftest import Workers  # tests/core/conftest.py; only for annotations

    from tests.conftest import OpenLog

TEAM = "crew"


class CountingFile(LockedJsonFile[list[Any]]):
    """The inbox, counting its rewrites."""

    writes = 0

    def _write(self, doc: Any, found: Any) -> None:
        type(self).writes += 1
        super()._write(doc, found)


def _entry(text: str, second: int = 0) -> dict[str, Any]:
    return {"from": "alice", "text": text, "timestamp": f"2026-12-01T00:00:{second:02d}.000Z", "read": False,
            "msg_id": f"id-{text}"}


def _texts(inbox: Path) -> list[str]:
    return [e["text"] for e in json.loads(inbox.read_bytes())]


def _spooled(inbox: Path) -> list[str]:
    spool = spool_dir(inbox)
    return sorted(p.name for p in spool.iterdir()) if spool.exists() else []


def _hold_lock(inbox: Path) -> tuple[threading.Event, threading.Thread]:
    """A thread holding ``inbox``'s lock until the returned event is set."""
    held, release = threading.Event(), threading.Event()

    def hold(entries: list[Any]) -> None:
        held.set()
        release.wait(30)

    thread = threading.Thread(target=LockedJsonFile(inbox, InboxAppendCodec()).update, args=(hold,))
    thread.start()
    assert held.wait(10)
    return release, thread


def test_appenders_queued_behind_a_held_lock_are_committed_by_one_rewrite(inbox: Path) -> None:
    release, holder = _hold_lock(inbox)
    CountingFile.writes = 0
    appenders = [SpooledAppend(CountingFile(inbox, InboxAppendCodec()), key=lambda e: e.get("msg_id"))
                 for _ in range(5)]
    threads = [threading.Thread(target=a.append, args=(_entry(f"m{i}"),)) for i, a in enumerate(appenders)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 10
    while len(list(spool_dir(inbox).glob("*.json"))) < 5:  # every one spooled and waiting
        assert time.monotonic() < deadline, "the appenders never spooled"
        time.sleep(0.005)
    release.set()
    holder.join(10)
    for thread in threads:
        thread.join(10)
        assert not thread.is_alive()
    assert sorted(_texts(inbox)) == [f"m{i}" for i in range(5)]
    assert CountingFile.writes == 1, "one holder commits everything spooled while it waited"
    assert _spooled(inbox) == []


KILLED_AFTER_REWRITE = """
import swarm.core.spool as spool

def stalled(paths):
    say("rewritten")
    time.sleep(600)

spool._unlink_all = stalled  # fault injection: freeze between the durable rewrite and deleting the claims
mb.send("bob", "doomed", sender="alice")
"""


def test_a_holder_killed_before_deleting_its_claims_does_not_double_them(
    workers: Workers, team: Home, inbox: Path
) -> None:
    mb = Mailbox(team, TEAM)
    mb._appending("bob", False)._drop(_entry("waiting"))  # an appender queued behind the holder to come
    doomed = workers.start("doomed", KILLED_AFTER_REWRITE)
    doomed.expect("rewritten")
    doomed.kill()
    assert _texts(inbox) == ["waiting", "doomed"], "the holder commits what was spooled, then its own"
    assert [name.endswith(".taken") for name in _spooled(inbox)] == [True], "the dead holder's claim is left"

    mb.send("bob", "next", sender="alice")
    assert _texts(inbox) == ["waiting", "doomed", "next"], "a committed claim was appended again"
    assert _spooled(inbox) == []
    assert [e.text for e in mb.take("bob")] == ["waiting", "doomed", "next"]


def test_an_uncontended_append_skips_the_spool(inbox: Path) -> None:
    SpooledAppend(LockedJsonFile(inbox, InboxAppendCodec()), key=lambda e: e.get("msg_id")).append(_entry("one"))
    assert _texts(inbox) == ["one"]
    assert not spool_dir(inbox).exists()


def test_a_wait_that_runs_out_takes_the_entry_back(inbox: Path) -> None:
    release, holder = _hold_lock(inbox)
    impatient = SpooledAppend(LockedJsonFile(inbox, InboxAppendCodec(), lock_timeout=0.3),
                              key=lambda e: e.get("msg_id"))
    try:
        with pytest.raises(LockTimeoutError, match=rf"the message was not sent; process {os.getpid()} \(.*\) holds "
                                                   rf"bob.json.lock, another thread of this process — retry$"):
            impatient.append(_entry("withdrawn"))
        assert _spooled(inbox) == [], "a withdrawn entry must not stay where the next holder would commit it"
    finally:
        release.set()
        holder.join(10)
    SpooledAppend(LockedJsonFile(inbox, InboxAppendCodec()), key=lambda e: e.get("msg_id")).append(_entry("later"))
    assert _texts(inbox) == ["later"]


def test_a_refused_rewrite_gives_the_others_back_and_withdraws_its_own(inbox: Path) -> None:
    inbox.write_text(json.dumps([_entry("x" * 2000)]))
    appender = SpooledAppend(LockedJsonFile(inbox, InboxAppendCodec()), key=lambda e: e.get("msg_id"))
    appender._drop(_entry("other", 1))  # another appender's entry, spooled and waiting for a holder
    with _file_size_limit(3000), pytest.raises(StorageError):  # the grown inbox no longer fits
        appender.append(_entry("y" * 2000, 2))
    assert [name.endswith(".json") for name in _spooled(inbox)] == [True], "the other entry is back, waiting"
    assert len(_texts(inbox)) == 1

    appender.append(_entry("after", 3))
    texts = _texts(inbox)
    assert texts[1:] == ["other", "after"], "the refused entry must never arrive; the other one must"
    assert [e.text for e in LockedJsonFile(inbox, InboxCodec()).read()][1:] == ["other", "after"]


def test_a_contended_append_reads_proc_locks_only_for_its_final_error(inbox: Path, open_log: OpenLog) -> None:
    """The retry loop's failed tries throw their LockBusyError away: naming the holder (``/proc/locks``, 6-16 ms
    on a loaded kernel) is paid once, by the error the caller hears after the deadline, which names it."""
    release, holder = _hold_lock(inbox)
    impatient = SpooledAppend(LockedJsonFile(inbox, InboxAppendCodec(), lock_timeout=0.3),
                              key=lambda e: e.get("msg_id"))
    try:
        with open_log.recording() as opened, pytest.raises(LockTimeoutError, match=rf"process {os.getpid()} "):
            impatient.append(_entry("withdrawn"))
    finally:
        release.set()
        holder.join(10)
    tries = [p for p in opened if p.endswith("bob.json.lock.swarm")]
    assert len(tries) >= 10, f"the loop tried the lock {len(tries)} times: not contended"
    assert opened.count("/proc/locks") == 1, f"/proc/locks read {opened.count('/proc/locks')} times for {len(tries)} tries"


def test_a_busy_locks_error_names_the_holder_when_rendered_not_when_made(inbox: Path, open_log: OpenLog) -> None:
    release, holder = _hold_lock(inbox)
    try:
        with open_log.recording() as opened:
            with pytest.raises(LockBusyError) as caught:
                LockedJsonFile(inbox, InboxAppendCodec(), lock_timeout=0.05).update(lambda entries: None)
            assert "/proc/locks" not in opened, "the holder was looked up before anyone asked"
            message = str(caught.value)
            assert str(caught.value) == message
        assert opened.count("/proc/locks") == 1, "rendered once, looked up once"
        assert message.startswith(f"could not lock {inbox} within 0.05s; process {os.getpid()} (")
        assert message.endswith("holds bob.json.lock, another thread of this process — retry")
    finally:
        release.set()
        holder.join(10)


def test_a_waiting_appender_tries_a_lock_whose_directory_is_there_only_every_blind_try(
        inbox: Path, open_log: OpenLog) -> None:
    """A held lock shows its directory: the waiter's ``lstat`` of it replaces a failed try (open, flock, close,
    an exception) at every poll. Before, a 0.3 s wait tried ~250 times (every millisecond, backed off); now
    about once per ``BLIND_TRY``, which still clears a lock a killed holder left."""
    release, holder = _hold_lock(inbox)
    impatient = SpooledAppend(LockedJsonFile(inbox, InboxAppendCodec(), lock_timeout=0.3),
                              key=lambda e: e.get("msg_id"))
    try:
        with open_log.recording() as opened, pytest.raises(LockTimeoutError):
            impatient.append(_entry("withdrawn"))
    finally:
        release.set()
        holder.join(10)
    tries = [p for p in opened if p.endswith("bob.json.lock.swarm")]
    assert 2 <= len(tries) <= 0.3 / BLIND_TRY + 5, f"the waiter tried the held lock {len(tries)} times in 0.3 s"


@pytest.mark.parametrize("junk", [b"not json", b"[" * 100_000], ids=["garbage", "nested-too-deep"])
def test_junk_dropped_into_the_spool_is_dropped_and_the_send_goes_through(inbox: Path, junk: bytes) -> None:
    """Anyone who can write the team directory can put a file in the spool; swarm never wrote it: a holder that
    claims it drops it (logged) and commits the rest, never fails the send that found it."""
    inbox.write_text("[]")
    spool = spool_dir(inbox)
    spool.mkdir(exist_ok=True)
    (spool / f"{inbox.name}.junk.json").write_bytes(junk)
    appender = SpooledAppend(LockedJsonFile(inbox, InboxAppendCodec()), key=lambda e: e.get("msg_id"))
    appender._drop(_entry("waiting", 1))
    appender.append(_entry("mine", 2))
    assert _texts(inbox) == ["waiting", "mine"]
    assert _spooled(inbox) == []
