"""Many processes sending to one inbox while another drains it.

Eight sender processes each send K numbered messages (``s3-m17``) to bob's
inbox through ``Mailbox.send`` while a taker process drains it, either with
``take`` in a tight loop or with ``wait`` + ``pending`` + ``acknowledge``.
Every message must arrive exactly once and each sender's messages in the
order they were sent. Without the lock around the read-modify-write, two
senders that read the same array would each write back only their own
append, and messages would be lost.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import Workers  # tests/core/conftest.py; only for annotations

SENDERS = 8
PER_SENDER = 40
TAKER_DEADLINE = 90.0

SENDER = """
index, count = int(sys.argv[1]), int(sys.argv[2])
say("ready")
sys.stdin.readline()
for j in range(count):
    mb.send("bob", f"s{index}-m{j}", sender=f"s{index}")
say("done")
"""

TAKER_PROLOGUE = """
import select
out, expected, deadline = sys.argv[1], int(sys.argv[2]), time.monotonic() + float(sys.argv[3])
fd = open_log(out)
got = 0
senders_done = False

def keep_going():
    # stop when all arrived, or one pass after the test says every sender finished
    global senders_done
    if senders_done or got >= expected or time.monotonic() > deadline:
        return False
    senders_done = bool(select.select([sys.stdin], [], [], 0)[0])
    return True
"""

TAKER_TAKE = TAKER_PROLOGUE + """
say("ready")
while keep_going():
    entries = mb.take("bob")
    record(fd, *({"text": e.text, "id": e.msg_id, "from": e.sender} for e in entries))
    got += len(entries)
say("done")
"""

TAKER_ACK = TAKER_PROLOGUE + """
watcher = mb.watcher("bob")
say("ready")
while keep_going():
    mb.wait("bob", 0.2, watcher=watcher)
    entries = mb.pending("bob")
    record(fd, *({"text": e.text, "id": e.msg_id, "from": e.sender} for e in entries))
    mb.acknowledge("bob", [e.msg_id for e in entries])
    got += len(entries)
say("done")
"""


def _received(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _run(workers: Workers, taker_code: str, out: Path) -> list[dict[str, str]]:
    expected = SENDERS * PER_SENDER
    taker = workers.start("taker", taker_code, out, expected, TAKER_DEADLINE)
    senders = [workers.start(f"s{i}", SENDER, i, PER_SENDER) for i in range(SENDERS)]
    for worker in [taker, *senders]:
        worker.expect("ready")
    for sender in senders:  # release them together so they contend for the lock
        sender.tell("go")
    for sender in senders:
        sender.expect("done", timeout=TAKER_DEADLINE)
        assert sender.join(10) == 0, sender.stderr()
    taker.tell("senders-done")
    taker.expect("done", timeout=TAKER_DEADLINE)
    assert taker.join(10) == 0, taker.stderr()
    return _received(out)


def _assert_exactly_once_in_order(received: list[dict[str, str]], inbox: Path) -> None:
    texts = [r["text"] for r in received]
    expected = {f"s{i}-m{j}" for i in range(SENDERS) for j in range(PER_SENDER)}
    counts = Counter(texts)
    duplicated = sorted(t for t, n in counts.items() if n > 1)
    missing = sorted(expected - counts.keys())
    unexpected = sorted(counts.keys() - expected)
    assert not missing and not duplicated, (
        f"{len(missing)} messages lost, e.g. {missing[:6]}; "
        f"{len(duplicated)} delivered more than once, e.g. {duplicated[:6]}"
    )
    assert not unexpected, f"messages nobody sent: {unexpected[:10]}"
    assert len({r["id"] for r in received}) == len(received), "msg_id reused"
    for i in range(SENDERS):
        order = [int(t.split("-m")[1]) for t in texts if t.startswith(f"s{i}-")]
        assert order == list(range(PER_SENDER)), f"sender s{i} reordered: {order}"
        assert {r["from"] for r in received if r["text"].startswith(f"s{i}-")} == {f"s{i}"}
    leftover = json.loads(inbox.read_text())
    assert leftover == [], f"inbox not drained: {leftover[:3]}"


@pytest.mark.timeout(180)
def test_many_senders_one_taker_exactly_once(workers: Workers, inbox: Path, tmp_path: Path) -> None:
    received = _run(workers, TAKER_TAKE, tmp_path / "received.jsonl")
    _assert_exactly_once_in_order(received, inbox)


@pytest.mark.timeout(180)
def test_many_senders_wait_pending_acknowledge_exactly_once(
    workers: Workers, inbox: Path, tmp_path: Path
) -> None:
    received = _run(workers, TAKER_ACK, tmp_path / "received.jsonl")
    _assert_exactly_once_in_order(received, inbox)
