"""Processes SIGKILLed in the middle of inbox traffic.

The random test kills senders and takers at random moments (seeded, delays in
the millisecond range, so most kills land inside a locked read-modify-write)
and after each kill checks what a crash may never break:

- the inbox still parses as a JSON array (read with ``json`` directly);
- every send that returned (logged by the sender, fsynced, only *after*
  ``send`` returned) is still in the inbox or was recorded by the taker, which
  uses the two-phase pattern ``pending`` -> record + fsync -> ``acknowledge``
  (``take`` would lose what a killed taker had not recorded yet, by design);
- nothing was quarantined: a crash must never look like corruption;
- the next writer is not blocked by the dead process's lock and is not
  confused by a ``.tmp`` it left behind.

The deterministic tests pin the two dangerous instants the random test can
only hit by chance: a writer killed while holding the lock, and a writer
killed after writing ``<inbox>.tmp`` but before renaming it over the inbox.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from swarm.core.document_codecs import InboxCodec
from swarm.core.home import Home
from swarm.core.jsonfile import LockedJsonFile
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import InboxEntry
from swarm.core.spool import spool_dir
from swarm.errors import LockTimeoutError

if TYPE_CHECKING:
    from conftest import Workers  # tests/core/conftest.py; only for annotations

TEAM = "crew"
ITERATIONS = 50
SEED = 20261130
NEXT_WRITER_BUDGET = 2.0
"""Seconds a send may take right after a kill; the lock wait alone would be 10 s."""

SENDER = """
sent = open_log(sys.argv[1])
say("ready")
sys.stdin.readline()
j = 0
while True:
    [entry] = mb.send("bob", f"{sys.argv[2]}-{j}", sender="crasher")
    record(sent, entry.msg_id)  # only after send returned
    j += 1
"""

TAKER = """
got = open_log(sys.argv[1])
watcher = mb.watcher("bob")
say("ready")
sys.stdin.readline()
while True:
    mb.wait("bob", 0.2, watcher=watcher)
    entries = mb.pending("bob")
    record(got, *(e.msg_id for e in entries))  # durable before the entries leave the inbox
    mb.acknowledge("bob", [e.msg_id for e in entries])
"""


def _logged_ids(path: Path) -> set[str]:
    """Ids in a worker's log; a torn last line (no newline) does not count."""
    if not path.exists():
        return set()
    data = path.read_text()
    complete = data if data.endswith("\n") else data.rsplit("\n", 1)[0]
    return {json.loads(line) for line in complete.splitlines() if line}


def _inbox_doc(inbox: Path) -> list[dict[str, Any]]:
    doc = json.loads(inbox.read_bytes())  # raises if a crash left a torn file
    assert isinstance(doc, list), f"inbox top level is {type(doc).__name__}, not an array"
    for entry in doc:
        assert isinstance(entry, dict) and isinstance(entry.get("text"), str), entry
    return doc


def _quarantined(inbox: Path) -> list[str]:
    return sorted(p.name for p in inbox.parent.glob(f"{inbox.name}.corrupt-*"))


def _timed_send(mb: Mailbox, text: str) -> tuple[InboxEntry, float]:
    start = time.monotonic()
    [entry] = mb.send("bob", text, sender="probe")
    return entry, time.monotonic() - start


@pytest.mark.timeout(120)
def test_random_sigkill_never_loses_an_acknowledged_send(
    workers: Workers, team: Home, inbox: Path, tmp_path: Path
) -> None:
    rng = random.Random(SEED)
    mb = Mailbox(team, TEAM)
    sent_log, got_log = tmp_path / "sent.jsonl", tmp_path / "got.jsonl"
    probes: set[str] = set()
    kills = {"sender": 0, "taker": 0}
    tmp_leftovers = 0
    for iteration in range(ITERATIONS):
        pair = {"sender": workers.start("sender", SENDER, sent_log, f"i{iteration}"),
                "taker": workers.start("taker", TAKER, got_log)}
        for worker in pair.values():
            worker.expect("ready")
        for worker in pair.values():
            worker.tell("go")
        # Kill one at a random moment, then the other a little later: both die mid-flight.
        order = rng.sample(sorted(pair), 2)
        time.sleep(rng.uniform(0.002, 0.060))
        pair[order[0]].kill()
        kills[order[0]] += 1
        time.sleep(rng.uniform(0.0, 0.020))
        pair[order[1]].kill()

        doc = _inbox_doc(inbox) if inbox.exists() else []
        acked = _logged_ids(sent_log) | probes
        lost = acked - {e.get("msg_id") for e in doc} - _logged_ids(got_log)
        assert not lost, f"iteration {iteration}: {len(lost)} acknowledged sends vanished: {sorted(lost)[:5]}"
        assert not _quarantined(inbox), f"iteration {iteration}: a crash produced {_quarantined(inbox)}"

        tmp = inbox.with_name(inbox.name + ".tmp")
        tmp_leftovers += tmp.exists()
        probe, elapsed = _timed_send(mb, f"probe-{iteration}")
        probes.add(probe.msg_id or "")
        assert elapsed < NEXT_WRITER_BUDGET, f"iteration {iteration}: next send waited {elapsed:.2f}s for a dead lock"
        assert not tmp.exists(), "a successful write must consume any leftover .tmp"
        assert probe.msg_id in {e.get("msg_id") for e in _inbox_doc(inbox)}

    # Drain what is left and settle the books once more.
    remaining = {e.msg_id for e in mb.take("bob")}
    acked = _logged_ids(sent_log) | probes
    assert acked <= remaining | _logged_ids(got_log)
    assert len(_logged_ids(sent_log)) > ITERATIONS, "senders barely sent anything; kills came too early"
    assert kills["sender"] >= 10 and kills["taker"] >= 10, kills
    print(f"kills first: {kills}; .tmp left behind by {tmp_leftovers}/{ITERATIONS} kills; "
          f"{len(_logged_ids(sent_log))} acknowledged sends")


HOLDER = """
from swarm.core.document_codecs import InboxCodec
from swarm.core.jsonfile import LockedJsonFile

def hold(entries):
    say("locked")
    time.sleep(600)

LockedJsonFile(INBOX, InboxCodec()).update(hold)
"""


def test_lock_of_a_killed_writer_does_not_block_the_next(
    workers: Workers, team: Home, inbox: Path
) -> None:
    mb = Mailbox(team, TEAM)
    mb.send("bob", "before", sender="alice")
    holder = workers.start("holder", HOLDER)
    holder.expect("locked")
    impatient = LockedJsonFile(inbox, InboxCodec(), lock_timeout=0.2)
    with pytest.raises(LockTimeoutError):  # proves the lock really is held
        impatient.update(lambda entries: None)
    holder.kill()
    entry, elapsed = _timed_send(mb, "after")
    assert elapsed < NEXT_WRITER_BUDGET, f"send after the holder died waited {elapsed:.2f}s"
    assert [e["text"] for e in _inbox_doc(inbox)] == ["before", "after"]
    assert entry.msg_id


STALLED_WRITER = """
import os as _os
stall_at = sys.argv[1]
real = getattr(_os, stall_at)

def stalled(*args):
    if stall_at == "fsync" or str(args[1]).endswith("bob.json"):
        say("stalled")
        time.sleep(600)
    return real(*args)

setattr(_os, stall_at, stalled)  # fault injection: freeze this child at that instant
mb.send("bob", "never-acknowledged", sender="doomed")
"""


@pytest.mark.parametrize("stall_at", ["fsync", "replace"], ids=["after-tmp-write", "before-rename"])
def test_writer_killed_mid_write_leaves_old_content_and_next_send_works(
    workers: Workers, team: Home, inbox: Path, stall_at: str
) -> None:
    mb = Mailbox(team, TEAM)
    mb.send("bob", "kept", sender="alice")
    before = inbox.read_bytes()
    doomed = workers.start("doomed", STALLED_WRITER, stall_at)
    doomed.expect("stalled")
    temps = list(inbox.parent.glob(inbox.name + ".tmp.*"))  # <name>.tmp.<pid>.<hex>, unique per write
    assert len(temps) == 1, "the writer should be frozen with its temp file written"
    tmp = temps[0]
    doomed.kill()

    assert inbox.read_bytes() == before, "a writer killed before its rename changed the inbox"
    assert [e.text for e in mb.read("bob")] == ["kept"]
    assert "never-acknowledged" in tmp.read_text(), "the .tmp should hold the dead writer's version"

    entry, elapsed = _timed_send(mb, "next")
    assert elapsed < NEXT_WRITER_BUDGET
    assert "never-acknowledged" in tmp.read_text(), "a dead writer's temp file is never reused"
    doc = _inbox_doc(inbox)
    assert [e["text"] for e in doc] == ["kept", "next"], "leftover .tmp content leaked into the inbox"
    assert doc[1]["msg_id"] == entry.msg_id
    assert not spool_dir(inbox).exists(), "an uncontended send goes straight to the inbox"
    assert not _quarantined(inbox)
