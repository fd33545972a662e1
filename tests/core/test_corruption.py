"""Damaged files, held locks and file modes.

- A file that does not parse (garbage bytes, wrong top-level type) is moved
  aside to ``<file>.corrupt-<ms>`` with its bytes intact, the event is logged,
  and the next send starts from an empty inbox.
- Entries that fail validation are dropped one at a time and logged; valid
  ones are kept, with fields swarm does not know about, across a rewrite.
- A garbage team file is quarantined and the team then reads as missing.
- A lock held by another process ends in ``LockTimeoutError`` naming the file.
- Directories are created 0700 and files 0600 (umask pinned to 022, so a
  default-mode file would show up as 0644).
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from swarm.core.document_codecs import InboxCodec
from swarm.core.home import Home
from swarm.core.jsonfile import LockedJsonFile
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import InboxEntry, Member
from swarm.core.teams import TeamStore
from swarm.errors import CorruptFileError, LockTimeoutError, NotFoundError, UsageError

if TYPE_CHECKING:
    from conftest import Workers  # tests/core/conftest.py; only for annotations

TEAM = "crew"
GARBAGE = b'\xff\xfe[{"from": "alice", "text": "half a mess\x00\x9c'
STAMP = "2026-11-30T04:22:38.123Z"


@pytest.fixture
def mb(team: Home) -> Mailbox:
    return Mailbox(team, TEAM)


def _quarantined(path: Path) -> list[Path]:
    found = sorted(path.parent.glob(f"{path.name}.corrupt-*"))
    for p in found:
        assert re.fullmatch(rf"{re.escape(path.name)}\.corrupt-\d{{13}}[-\w]*", p.name), p.name
    return found


def _records(caplog: pytest.LogCaptureFixture, message: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage() == message and r.levelno >= logging.WARNING]


def _entry(text: Any = "hi", **extra: Any) -> dict[str, Any]:
    return {"from": "alice", "text": text, "timestamp": STAMP, **extra}


# -- whole-file corruption -------------------------------------------------------

ACCESSES: dict[str, Callable[[Mailbox], object]] = {
    "read": lambda mb: mb.read("bob"),
    "pending": lambda mb: mb.pending("bob"),
    "take": lambda mb: mb.take("bob"),
    "send": lambda mb: mb.send("bob", "first after", sender="alice"),
}


READ_ONLY = {"read", "pending"}


@pytest.mark.parametrize("access", sorted(ACCESSES))
@pytest.mark.parametrize("content", [GARBAGE, b'{"from": "alice", "text": "an object, not an array"}', b""],
                         ids=["garbage-bytes", "top-level-object", "empty-file"])
def test_unparsable_inbox_is_quarantined_by_a_writer_and_replaced(
    mb: Mailbox, inbox: Path, caplog: pytest.LogCaptureFixture, access: str, content: bytes
) -> None:
    inbox.write_bytes(content)
    ACCESSES[access](mb)
    if access in READ_ONLY:  # a reader never moves a file aside: it reads it as empty and leaves it
        assert ACCESSES[access](mb) == [] and inbox.read_bytes() == content and not _quarantined(inbox)
        [warned] = _records(caplog, "read an unparsable file as empty and left it in place")[:1]
        assert warned.path == str(inbox)  # type: ignore[attr-defined]
        mb.send("bob", "first after", sender="alice")

    [moved] = _quarantined(inbox)
    assert moved.read_bytes() == content, "quarantine must keep the bad bytes for inspection"
    [logged] = _records(caplog, "quarantined corrupt file")
    assert logged.path == str(inbox) and logged.moved_to == str(moved)  # type: ignore[attr-defined]

    mb.send("bob", "works again", sender="alice")
    doc = json.loads(inbox.read_bytes())
    expected = ["works again"] if access == "take" else ["first after", "works again"]
    assert [e["text"] for e in doc] == expected
    assert _quarantined(inbox) == [moved], "a healthy inbox must not be quarantined again"


def test_invalid_entries_are_dropped_one_by_one_by_readers_and_extras_survive_a_rewrite(
    mb: Mailbox, inbox: Path, caplog: pytest.LogCaptureFixture
) -> None:
    keep_a = _entry("keep a", color="blue", futureField={"nested": [1, 2]}, msgV=1, msg_id="a")
    bad_text = _entry({"not": "a string"}, msg_id="bad-text")
    no_from = {"text": "who sent this?", "timestamp": STAMP, "msg_id": "no-from"}
    keep_b = _entry("keep b", read=False, lead_sig="sig", msg_id="b")
    inbox.write_text(json.dumps([keep_a, bad_text, no_from, 42, keep_b]))

    assert [e.text for e in mb.read("bob")] == ["keep a", "keep b"]
    dropped = _records(caplog, "dropped invalid inbox entry")
    assert sorted(r.index for r in dropped) == [1, 2, 3]  # type: ignore[attr-defined]
    assert all(r.path == str(inbox) for r in dropped)  # type: ignore[attr-defined]

    [new] = mb.send("bob", "new", sender="carol")  # a send appends and leaves what is there as it is
    doc = json.loads(inbox.read_bytes())
    assert doc[:5] == [keep_a, bad_text, no_from, 42, keep_b] and doc[5]["msg_id"] == new.msg_id
    assert [e.text for e in mb.read("bob")] == ["keep a", "keep b", "new"]  # the reader still judges them

    mb.acknowledge("bob", ["a"])  # the reader's locked rewrite drops the invalid ones
    doc = json.loads(inbox.read_bytes())
    assert doc[0] == keep_b, "valid entries must come back byte-for-byte, unknown fields included"
    assert doc[1]["msg_id"] == new.msg_id and len(doc) == 2
    assert not _quarantined(inbox), "one bad entry must not condemn the whole file"


# -- team file ---------------------------------------------------------------------


def test_garbage_team_file_is_left_by_readers_then_quarantined_by_a_writer(
    team: Home, caplog: pytest.LogCaptureFixture
) -> None:
    config = team.config_path(TEAM)
    config.write_bytes(GARBAGE)
    store = TeamStore(team)

    # A read-only look never moves the file aside (another program may be rewriting it), and says it does not parse.
    with pytest.raises(CorruptFileError, match="does not parse"):
        store.get(TEAM)
    assert config.read_bytes() == GARBAGE and not _quarantined(config)
    assert _records(caplog, "read an unparsable file as empty and left it in place")[0].path == str(config)  # type: ignore[attr-defined]

    # A writer, under the lock, moves it aside; from then on the error says where the evidence went.
    with pytest.raises(NotFoundError):
        store.update_member(TEAM, "team-lead", is_active=False)
    [moved] = _quarantined(config)
    assert moved.read_bytes() == GARBAGE
    assert _records(caplog, "quarantined corrupt file")[0].path == str(config)  # type: ignore[attr-defined]
    with pytest.raises(CorruptFileError, match=r"did not parse and was moved to .*config\.json\.corrupt-"):
        store.get(TEAM)
    assert not store.exists(TEAM)
    with pytest.raises(CorruptFileError):
        Mailbox(team, TEAM).send("bob", "hi", sender="alice")


def test_invalid_member_is_dropped_others_and_unknown_fields_kept(
    team: Home, caplog: pytest.LogCaptureFixture
) -> None:
    config = team.config_path(TEAM)
    doc = json.loads(config.read_text())
    doc["teamExtra"] = {"from": "a newer writer"}
    doc["members"][1]["futureField"] = [1, "two"]
    doc["members"].insert(1, {"name": "ghost", "agentType": "no agentId"})
    doc["members"].append({"agentId": "x@crew", "name": 7})
    config.write_text(json.dumps(doc))
    store = TeamStore(team)

    assert [m.name for m in store.get(TEAM).members] == ["team-lead", "bob"]
    assert sorted(r.index for r in _records(caplog, "dropped invalid team member")) == [1, 3]  # type: ignore[attr-defined]

    store.update_member(TEAM, "bob", is_active=False)
    after = json.loads(config.read_text())
    assert [m["name"] for m in after["members"]] == ["team-lead", "bob"]
    assert after["teamExtra"] == {"from": "a newer writer"}
    assert after["members"][1]["futureField"] == [1, "two"]
    assert after["members"][1]["isActive"] is False


# -- locks ---------------------------------------------------------------------------

LOCK_HOLDER = """
from pathlib import Path
from swarm.core.flock import acquire, release
held = acquire(Path(sys.argv[1]), 10.0)
say("locked")
sys.stdin.readline()
release(held)
say("released")
sys.stdin.readline()
"""


def test_lock_held_elsewhere_times_out_with_the_file_named(
    workers: Workers, inbox: Path, mb: Mailbox
) -> None:
    mb.send("bob", "before", sender="alice")
    before = inbox.read_bytes()
    holder = workers.start("holder", LOCK_HOLDER, f"{inbox}.lock")
    holder.expect("locked")
    impatient = LockedJsonFile(inbox, InboxCodec(), lock_timeout=0.3)
    start = time.monotonic()
    with pytest.raises(LockTimeoutError) as caught:
        impatient.update(lambda entries: entries.clear())
    elapsed = time.monotonic() - start
    assert str(inbox) in str(caught.value) and "bob.json.lock" in str(caught.value)
    assert 0.25 <= elapsed < 5, f"bounded wait should be ~0.3 s, was {elapsed:.2f}s"
    assert inbox.read_bytes() == before, "nothing may be written without the lock"


def test_send_waits_for_the_lock_then_goes_through(
    workers: Workers, inbox: Path, mb: Mailbox
) -> None:
    holder = workers.start("holder", LOCK_HOLDER, f"{inbox}.lock")
    holder.expect("locked")
    outcome: dict[str, Any] = {}

    def send() -> None:
        try:
            outcome["entries"] = mb.send("bob", "patient", sender="alice")
        except Exception as exc:  # handed to the test thread, which asserts on it
            outcome["error"] = exc

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    thread.join(0.5)
    assert thread.is_alive(), "send finished while another process held the inbox lock"
    assert not inbox.exists() or json.loads(inbox.read_bytes()) == []
    holder.tell("release")
    holder.expect("released")
    thread.join(8)
    assert not thread.is_alive() and "error" not in outcome, outcome
    assert [e["text"] for e in json.loads(inbox.read_bytes())] == ["patient"]


# -- file modes ------------------------------------------------------------------------


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _build_home(home: Home) -> None:
    store = TeamStore(home)
    store.create(TEAM, cwd=str(home.root))
    store.add_member(TEAM, Member(agent_id=f"bob@{TEAM}", name="bob"))
    mb = Mailbox(home, TEAM)
    mb.send("bob", "hi", sender="team-lead")
    mb.send("*", "all", sender="bob")
    mb.acknowledge("bob", [e.msg_id or "" for e in mb.pending("bob")])
    mb.take("team-lead")


def _modes(root: Path, want_dirs: bool) -> dict[str, str]:
    found = {root: root.stat()} if want_dirs else {}
    found.update({p: p.stat() for p in root.rglob("*")})
    return {str(p.relative_to(root.parent)): oct(stat.S_IMODE(s.st_mode)) for p, s in found.items()
            if stat.S_ISDIR(s.st_mode) == want_dirs}


def test_files_are_created_0600(home: Home, umask_022: None) -> None:
    _build_home(home)
    modes = _modes(home.root, want_dirs=False)
    names = {Path(p).name for p in modes}
    assert {"config.json", "config.json.lock.swarm", "bob.json", "bob.json.lock.swarm", "team-lead.json.lock.swarm"} <= names
    assert not {"config.json.lock", "bob.json.lock"} & names, "a lock directory is gone once released"
    assert {p: m for p, m in modes.items() if m != "0o600"} == {}


def test_directories_are_created_0700(home: Home, umask_022: None) -> None:
    assert not home.root.exists()
    _build_home(home)
    modes = _modes(home.root, want_dirs=True)
    assert {"home", "home/teams", "home/teams/crew", "home/teams/crew/inboxes"} <= modes.keys()
    assert {p: m for p, m in modes.items() if m != "0o700"} == {}


# -- regressions: bugs found while writing these tests (fixed in swarm/core/jsonfile.py) ---------
#
# - json.loads raised RecursionError on deeply nested garbage, which escaped the
#   quarantine and wedged the inbox for every reader and writer;
# - a lone surrogate (valid JSON: "\ud83d") made every later write raise
#   UnicodeEncodeError: one bad entry and nobody could send to that inbox;
# - a second quarantine in the same millisecond os.replace()d over the first.


def test_deeply_nested_garbage_is_quarantined_too(mb: Mailbox, inbox: Path) -> None:
    garbage = b"[" * 100_000
    inbox.write_bytes(garbage)
    assert mb.read("bob") == [] and not _quarantined(inbox)
    mb.send("bob", "works again", sender="alice")
    [moved] = _quarantined(inbox)
    assert moved.read_bytes() == garbage
    assert [e.text for e in mb.read("bob")] == ["works again"]


def test_lone_surrogate_from_another_writer_does_not_wedge_the_inbox(mb: Mailbox, inbox: Path) -> None:
    inbox.write_text('[{"from": "cc", "text": "cut \\ud83d", "timestamp": "%s", "summary": "\\ud83d"}]' % STAMP)
    assert [e.text for e in mb.read("bob")] == ["cut \ud83d"]  # it parses and validates
    mb.send("bob", "next", sender="alice")
    assert [e.text for e in mb.read("bob")] == ["cut \ud83d", "next"]


def test_send_of_a_lone_surrogate_is_stored_or_refused_cleanly(mb: Mailbox) -> None:
    text = "bytes \udcff from a tool"
    try:
        mb.send("bob", text, sender="alice")
    except UsageError:
        return  # a clear refusal is acceptable
    assert [e.text for e in mb.read("bob")] == [text]


def test_quarantine_never_overwrites_earlier_evidence(
    mb: Mailbox, inbox: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Deterministic stand-in for "two quarantines in one millisecond": an earlier
    # quarantine's file already sits at every name the next second can produce.
    earlier: set[Path] = set()
    garbage: list[bytes] = []
    for attempt in range(20):  # repeated only if a loaded machine outran the window
        now = int(time.time() * 1000)
        for ms in range(now, now + 1000):
            path = inbox.with_name(f"{inbox.name}.corrupt-{ms}")
            if path not in earlier and not path.exists():
                path.write_bytes(b"earlier evidence")
                earlier.add(path)
        garbage.append(GARBAGE + b"%d" % attempt)
        inbox.write_bytes(garbage[-1])
        mb.take("bob")  # a writer: it quarantines after the re-read window (a reader would leave the file)
        moved_to = _records(caplog, "quarantined corrupt file")[-1].moved_to  # type: ignore[attr-defined]
        if now <= int(Path(moved_to).name.split(".corrupt-")[1][:13]) < now + 1000:
            break  # the quarantine fell inside the occupied window: the case under test
    contents = [p.read_bytes() for p in _quarantined(inbox)]
    assert contents.count(b"earlier evidence") == len(earlier), "an earlier quarantined file was overwritten"
    assert all(g in contents for g in garbage)


# -- sanity: the InboxEntry model is what the tests above assume -----------------------------


def test_inbox_entry_keeps_unknown_fields() -> None:
    entry = InboxEntry.model_validate(_entry("x", futureField=1))
    assert entry.wire() == _entry("x", futureField=1)
