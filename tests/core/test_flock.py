"""The lock every swarm file is changed under: Claude Code's lock directory behind a swarm flock.

Real processes and threads; "Claude Code" here is what its lock looks like on
disk (a directory ``<file>.lock/`` whose mtime its holder sets), made by the
test. The real ``proper-lockfile`` package is in ``test_cc_lock_interop.py``.
"""

from __future__ import annotations

import os
import signal
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from swarm.core.flock import (
    BLANK,
    FUTURE_MTIME,
    MARK_SIZE,
    OUTLAST_STALE,
    STALE_AFTER,
    LockTimeout,
    acquire,
    locked,
    release,
    swarm_lock_path,
)

if TYPE_CHECKING:
    from conftest import Workers  # tests/core/conftest.py; only for annotations


@pytest.fixture
def lock(tmp_path: Path) -> Path:
    return tmp_path / "x.json.lock"


def claude_code_holds(path: Path, age: float = 0.0) -> None:
    """Make ``path`` the way proper-lockfile does: mkdir, then set its mtime (here ``age`` s in the past)."""
    path.mkdir()
    stamp = time.time() - age
    os.utime(path, (stamp, round(stamp, 3)))


def _in_thread(path: Path, timeout: float) -> tuple[threading.Thread, dict[str, float]]:
    """Acquire and release ``path`` in a thread; the dict gets ``took`` (seconds) or ``error``."""
    outcome: dict[str, float] = {}

    def run() -> None:
        start = time.monotonic()
        try:
            with locked(path, timeout):
                outcome["took"] = time.monotonic() - start
        except LockTimeout:
            outcome["error"] = time.monotonic() - start

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


# -- basics ----------------------------------------------------------------------------


def test_the_lock_is_a_directory_while_held_and_gone_after(lock: Path) -> None:
    with locked(lock, 1.0):
        assert stat.S_ISDIR(os.lstat(lock).st_mode), "Claude Code must find a directory at <file>.lock"
        assert swarm_lock_path(lock).read_bytes()[:2] == b"H ", "the holder marks the directory as its own"
    assert not lock.exists()
    assert swarm_lock_path(lock).read_bytes()[:MARK_SIZE] == BLANK, "a released lock leaves no mark"


def test_bounded_wait_then_timeout(lock: Path) -> None:
    with locked(lock, 1.0):
        start = time.monotonic()
        with pytest.raises(LockTimeout), locked(lock, 0.2):
            pass
        assert 0.2 <= time.monotonic() - start < 2.0
    with locked(lock, 0.2):  # released: free again
        pass


def test_threads_of_one_process_exclude_each_other(lock: Path) -> None:
    inside, overlaps = [0], [0]

    def work() -> None:
        for _ in range(200):
            with locked(lock, 10.0):
                inside[0] += 1
                if inside[0] > 1:
                    overlaps[0] += 1
                time.sleep(0)
                inside[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlaps[0] == 0


COUNTER = """
from pathlib import Path
from swarm.core.flock import locked
counter, lock = Path(sys.argv[1]), Path(sys.argv[2])
say("ready")
sys.stdin.readline()
for _ in range(300):
    with locked(lock, 20.0):
        value = int(counter.read_text() or "0")   # a lost update shows as a short count
        counter.write_text(str(value + 1))
say("done")
"""


def test_processes_exclude_each_other(workers: Workers, tmp_path: Path) -> None:
    counter, lock = tmp_path / "counter", tmp_path / "counter.lock"
    counter.write_text("0")
    started = [workers.start(f"counter{i}", COUNTER, counter, lock) for i in range(4)]
    for worker in started:
        worker.expect("ready")
    for worker in started:
        worker.tell()
    for worker in started:
        worker.expect("done", timeout=60)
    assert counter.read_text() == str(4 * 300)
    assert not lock.exists()


# -- Claude Code's directory ------------------------------------------------------------


def test_waits_while_claude_code_holds_the_directory_then_proceeds(lock: Path) -> None:
    claude_code_holds(lock)
    with pytest.raises(LockTimeout), locked(lock, 0.3):
        pass
    assert lock.is_dir(), "a live Claude Code lock must not be removed"
    thread, outcome = _in_thread(lock, 10.0)
    time.sleep(0.3)
    assert thread.is_alive() and not outcome, "swarm went ahead while Claude Code held the lock"
    lock.rmdir()  # Claude Code releases
    thread.join(5)
    assert "took" in outcome and outcome["took"] >= 0.3, outcome
    assert not lock.exists()


def test_a_stale_directory_is_taken_over(lock: Path) -> None:
    claude_code_holds(lock, age=STALE_AFTER + 5)
    start = time.monotonic()
    with locked(lock, 1.0):
        assert lock.is_dir()
    assert time.monotonic() - start < 0.5


def test_a_fresh_directory_under_a_pending_mark_is_claude_codes(lock: Path) -> None:
    # A swarm holder blanks the "making it now" mark when its mkdir fails; were it
    # killed before that, the directory still shows Claude Code's mtime, not ours.
    swarm_lock_path(lock).write_bytes(b"P %020d %020d\n" % (time.time_ns() - 10**6, 0))
    claude_code_holds(lock)
    with pytest.raises(LockTimeout), locked(lock, 0.3):
        pass
    assert lock.is_dir()


def test_release_leaves_a_directory_that_is_not_its_own(lock: Path) -> None:
    held = acquire(lock, 1.0)
    lock.rmdir()  # as if Claude Code took it over after swarm held it too long
    claude_code_holds(lock)
    release(held)
    assert lock.is_dir(), "release removed someone else's lock"
    assert swarm_lock_path(lock).read_bytes()[:MARK_SIZE] == BLANK


# -- dead swarm holders ------------------------------------------------------------------

HOLDER = """
from pathlib import Path
from swarm.core.flock import acquire
held = acquire(Path(sys.argv[1]), 10.0)
say("locked")
time.sleep(600)
"""


def test_a_killed_swarm_holder_is_replaced_at_once(workers: Workers, lock: Path) -> None:
    holder = workers.start("holder", HOLDER, lock)
    holder.expect("locked")
    thread, outcome = _in_thread(lock, 10.0)
    time.sleep(0.2)
    assert thread.is_alive(), "the lock was taken while its holder lived"
    holder.kill()
    thread.join(5)
    assert outcome.get("took", 99) < 1.0 + 0.2, outcome
    assert not lock.exists()


TAKER_KILLED_AT_MAKE = """
import os, signal
from pathlib import Path
import swarm.core.flock as flock

def die(path, parked):  # killed the moment it puts its own directory in place: its mark is written
    os.kill(os.getpid(), signal.SIGKILL)

flock._make = die
say("taking")
flock.acquire(Path(sys.argv[1]), 10.0)
"""


def test_a_taker_killed_while_replacing_a_dead_holder_leaves_no_10s_wait(workers: Workers, lock: Path) -> None:
    """Two kills in a row: the holder, then the next taker right after it wrote its own mark.

    The dead holder's directory must be gone before a new mark overwrites the
    one that proves it is a dead swarm's; otherwise it looks like Claude Code's
    and every writer waits for it to turn stale (10 s).
    """
    holder = workers.start("holder", HOLDER, lock)
    holder.expect("locked")
    holder.kill()
    taker = workers.start("taker", TAKER_KILLED_AT_MAKE, lock)
    taker.expect("taking")
    assert taker.proc.wait(10) == -9
    start = time.monotonic()
    with locked(lock, OUTLAST_STALE):
        pass
    assert time.monotonic() - start < 1.0


def test_killed_between_mkdir_and_its_mark_is_recognised(lock: Path) -> None:
    # The state a holder leaves when killed right after mkdir: the pending mark
    # and a directory nobody touched since (mtime == ctime).
    swarm_lock_path(lock).write_bytes(b"P %020d %020d\n" % (time.time_ns(), 0))
    lock.mkdir()
    start = time.monotonic()
    with locked(lock, 5.0):
        pass
    assert time.monotonic() - start < 0.5


# -- an older swarm's lock file --------------------------------------------------------

OLD_SWARM = """
import fcntl
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
say("locked")
sys.stdin.readline()
os.close(fd)
say("released")
sys.stdin.readline()
"""


def test_an_old_regular_lock_file_becomes_the_directory(lock: Path) -> None:
    lock.write_bytes(b"")
    with locked(lock, 1.0):
        assert stat.S_ISDIR(os.lstat(lock).st_mode)
    assert not lock.exists()


def test_an_old_swarm_holding_its_lock_file_is_waited_for(workers: Workers, lock: Path) -> None:
    old = workers.start("old", OLD_SWARM, lock)
    old.expect("locked")
    thread, outcome = _in_thread(lock, 10.0)
    time.sleep(0.3)
    assert thread.is_alive() and not outcome
    old.tell()
    old.expect("released")
    thread.join(5)
    assert "took" in outcome, outcome
    assert not lock.exists()


@pytest.fixture
def fifo_lock(lock: Path) -> Iterator[Path]:
    os.mkfifo(lock)
    yield lock


def test_a_lock_dropped_without_its_release_gives_its_flock_back_at_once(lock: Path) -> None:
    """What a signal handler's exception does when it cuts in right after the lock was taken, before the
    caller's ``try``: the taken lock is dropped unreleased. Its flock goes with it (before: the descriptor
    stayed open, and the lock held until the process ended, against this very process too)."""
    acquire(lock, 1.0)  # taken, and dropped at once
    assert lock.is_dir()  # its directory is left, under its mark, as a killed holder's
    start = time.monotonic()
    with locked(lock, 0.5):  # another descriptor of this same process
        assert time.monotonic() - start < 0.5
    assert not lock.exists()


def test_a_signal_cutting_in_at_any_instant_never_leaves_the_lock_held(lock: Path) -> None:
    """The attacker's version: a timer signal whose handler raises lands at random instants of thousands of
    lock cycles; once its exception is handled, the lock is always free to take again (before: within a few
    dozen cut-ins one was left held for good)."""
    class CutIn(BaseException):
        pass

    armed = [False]

    def cut_in(signum: int, frame: object) -> None:
        if armed[0]:
            raise CutIn

    before = signal.signal(signal.SIGALRM, cut_in)
    cut = 0
    try:
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            try:
                armed[0] = True
                signal.setitimer(signal.ITIMER_REAL, 0.00002 + (time.monotonic_ns() % 300) / 1e6)
                for _ in range(10_000):
                    with locked(lock, 1.0):
                        pass
            except CutIn:
                cut += 1
            finally:
                armed[0] = False
                signal.setitimer(signal.ITIMER_REAL, 0)
            with locked(lock, 0.5):  # LockTimeout here: a cut-in left the lock held
                pass
    finally:
        signal.signal(signal.SIGALRM, before)
    assert cut > 100, f"only {cut} cut-ins: the test did not exercise the lock"


def test_something_else_at_the_lock_path_is_an_error_not_a_hang(fifo_lock: Path) -> None:
    with pytest.raises(OSError, match="neither a lock directory"), locked(fifo_lock, 5.0):
        pass


def test_jsonfile_waits_for_a_claude_code_lock_instead_of_failing(tmp_path: Path) -> None:
    from swarm.core.document_codecs import InboxCodec
    from swarm.core.jsonfile import LockedJsonFile
    from swarm.errors import LockTimeoutError

    inbox = tmp_path / "bob.json"
    claude_code_holds(tmp_path / "bob.json.lock")
    with pytest.raises(LockTimeoutError, match=r"could not lock .*bob.json within 0.2s; another program \(Claude "
                                               r"Code\) holds bob.json.lock — retry; a lock it left behind is taken "
                                               r"over once untouched for 10s"):
        LockedJsonFile(inbox, InboxCodec(), lock_timeout=0.2).update(lambda entries: None)
    (tmp_path / "bob.json.lock").rmdir()
    LockedJsonFile(inbox, InboxCodec(), lock_timeout=0.2).update(lambda entries: None)
    assert inbox.read_bytes() == b"[]"


WAITING_HOLDER = """
from pathlib import Path
from swarm.core.flock import locked
with locked(Path(sys.argv[1]), 5.0):
    say("holding")
    sys.stdin.readline()
say("released")
"""


def test_a_wait_that_runs_out_names_a_stopped_holder_and_how_to_resume_it(workers: Workers, tmp_path: Path) -> None:
    """A teammate frozen (Ctrl-Z, SIGSTOP) while it writes keeps the file's lock: the error says who and what to do."""
    import signal

    from swarm.core.document_codecs import InboxCodec
    from swarm.core.jsonfile import LockedJsonFile
    from swarm.errors import LockBusyError

    inbox = tmp_path / "bob.json"
    holder = workers.start("holder", WAITING_HOLDER, tmp_path / "bob.json.lock")
    holder.expect("holding")
    pid = holder.proc.pid
    with pytest.raises(LockBusyError, match=rf"within 0.2s; process {pid} \(python[^)]*\) holds bob.json.lock — "
                                            rf"retry, or end it if it is stuck \(kill {pid}\)$"):
        LockedJsonFile(inbox, InboxCodec(), lock_timeout=0.2).update(lambda entries: None)
    os.kill(pid, signal.SIGSTOP)
    try:
        with pytest.raises(LockBusyError, match=rf"process {pid} \(python[^)]*\) holds bob.json.lock and is stopped "
                                                rf"\(Ctrl-Z or SIGSTOP\) — resume it \(kill -CONT {pid}\) or end it "
                                                rf"\(kill {pid}\)$"):
            LockedJsonFile(inbox, InboxCodec(), lock_timeout=0.2).update(lambda entries: None)
    finally:
        os.kill(pid, signal.SIGCONT)
    holder.tell()
    holder.expect("released")
    LockedJsonFile(inbox, InboxCodec(), lock_timeout=5).update(lambda entries: None)  # resumed, it let go
    assert inbox.read_bytes() == b"[]"


def test_the_default_wait_outlasts_a_dead_claude_code_lock_dated_ahead(tmp_path: Path) -> None:
    # proper-lockfile dates a new lock directory up to FUTURE_MTIME ahead of the clock (its mtime
    # precision probe), so its dead holder's lock is stale only STALE_AFTER + FUTURE_MTIME later.
    from swarm.core.document_codecs import InboxCodec
    from swarm.core.jsonfile import LockedJsonFile

    inbox = tmp_path / "bob.json"
    ahead = time.time() + FUTURE_MTIME
    (tmp_path / "bob.json.lock").mkdir()
    os.utime(tmp_path / "bob.json.lock", (ahead, ahead))
    start = time.monotonic()
    LockedJsonFile(inbox, InboxCodec()).update(lambda entries: None)  # the default wait
    took = time.monotonic() - start
    assert STALE_AFTER + FUTURE_MTIME - 0.5 < took < OUTLAST_STALE, took
    assert inbox.read_bytes() == b"[]"
