"""swarm takes turns with Claude Code on a lock it uses, and only then (``swarm.core.lock_turns``).

Threads of this process write back to back through the real lock; what is
measured is when the lock directory was free. "Claude Code" is what its lock
and its writes look like on disk. The real ``proper-lockfile`` under Claude
Code's own retry policy is in ``test_cc_lock_interop.py``.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from swarm.core.flock import acquire, release
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.lock_turns import CC_RETRY_GAP, MAX_RUN, TURN_GAP
from tests.core.conftest import RECIPIENT, TEAM

HOLD = 0.002
"""Seconds each hold lasts (about a small inbox rewrite with its fsync)."""


@pytest.fixture
def target(tmp_path: Path) -> Path:
    path = tmp_path / "bob.json"
    path.write_text("[]")
    return path


def _lock(target: Path) -> Path:
    return target.with_name(target.name + ".lock")


def storm(target: Path, seconds: float, writers: int = 3, *, shared: bool = False) -> list[float]:
    """``writers`` threads holding the lock back to back for ``seconds``; the free moments between holds."""
    holds: list[tuple[float, float]] = []
    guard = threading.Lock()
    end = time.monotonic() + seconds

    def write() -> None:
        while time.monotonic() < end:
            held = acquire(_lock(target), 5.0, shared=shared)
            start = time.monotonic()
            time.sleep(HOLD)
            stop = time.monotonic()
            release(held)
            with guard:
                holds.append((start, stop))

    threads = [threading.Thread(target=write) for _ in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    holds.sort()
    return [later[0] - earlier[1] for earlier, later in zip(holds, holds[1:], strict=False)]


def longest_run(target: Path, seconds: float, *, shared: bool = False) -> tuple[float, int]:
    """The longest stretch without a free moment Claude Code's tries could not miss, and how many such moments."""
    runs: list[float] = []
    run = 0.0
    for gap in storm(target, seconds, shared=shared):
        if gap > CC_RETRY_GAP:
            runs.append(run)
            run = 0.0
        else:
            run += gap + HOLD
    runs.append(run)
    return max(runs), len(runs) - 1


def test_a_lock_only_swarm_uses_is_never_left_free_on_purpose(target: Path) -> None:
    gaps = storm(target, 0.8)
    assert len(gaps) > 100
    assert max(gaps) < CC_RETRY_GAP, "swarm paused on a lock nobody else uses"


def test_after_claude_code_held_the_lock_swarm_leaves_it_free_in_time(target: Path) -> None:
    _lock(target).mkdir()  # Claude Code holds it while swarm waits
    waiter = threading.Thread(target=lambda: release(acquire(_lock(target), 5.0)))
    waiter.start()
    time.sleep(0.05)
    _lock(target).rmdir()
    waiter.join()
    run, turns = longest_run(target, 1.5)
    assert turns >= 2, "swarm did not take turns after Claude Code held the lock"
    assert run < MAX_RUN + 0.1, f"swarm held the lock {run:.3f}s without a free moment Claude Code would find"


def test_a_file_replaced_under_someone_elses_lock_makes_swarm_take_turns(target: Path) -> None:
    release(acquire(_lock(target), 5.0))  # swarm's last write: it notes the file as it left it
    replacement = target.with_name("bob.json.tmp.1")  # Claude Code writes: temp file, then rename
    replacement.write_text("[]")
    os.rename(replacement, target)
    run, turns = longest_run(target, 1.5)
    assert turns >= 2 and run < MAX_RUN + 0.1, (turns, run)


def test_a_lock_the_caller_says_is_shared_takes_turns_from_the_start(target: Path) -> None:
    run, turns = longest_run(target, 1.5, shared=True)
    assert turns >= 2 and run < MAX_RUN + 0.1, (turns, run)
    assert TURN_GAP > CC_RETRY_GAP


def test_a_reader_that_was_not_told_does_not_starve_a_sender_that_was(team: Home) -> None:
    """A lead polls its inbox every 20 ms (a short hold each time, not told the team includes Claude Code); a
    teammate's send, told so, may take the lock only inside a run or after a gap. Before the record was shared, the
    poller kept one run going for ever and the send waited out its lock timeout: a lost answer (seen as a
    teammate that failed while `swarm up` stopped a team with a Claude Code member)."""
    config = team.config_path(TEAM)
    config.write_text(json.dumps({**json.loads(config.read_text()), "leadSessionId": "s-1"}, indent=2))
    reader, sender = Mailbox(team, TEAM), Mailbox(team, TEAM)
    stop = threading.Event()
    sent = threading.Event()
    taken: list[str] = []

    def poll() -> None:  # as the lead's coordinator takes its inbox: a locked read and prune each time
        while not stop.wait(0.02):
            taken.extend(e.text for e in reader.take(RECIPIENT))

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        time.sleep(MAX_RUN + 0.1)  # the poller's run is past its length: a told holder now needs a gap

        def send() -> None:
            sender.send(RECIPIENT, "answer", sender="alice")
            sent.set()

        sending = threading.Thread(target=send)
        sending.start()
        assert sent.wait(6.0), "the send got the lock only once the poller stopped"
    finally:
        stop.set()
        poller.join()
    sending.join()
    assert taken + [e.text for e in reader.take(RECIPIENT)] == ["answer"]
