from __future__ import annotations

import json
import threading
import time

import pytest

from swarm.core.home import Home
from swarm.core.mailbox import MAX_MESSAGE_BYTES, Mailbox
from swarm.core.protocol import Member
from swarm.core.teams import TeamStore
from swarm.errors import NotFoundError, UsageError


@pytest.fixture
def mailbox(home: Home) -> Mailbox:
    store = TeamStore(home)
    store.create("t")
    for name in ("alice", "bob"):
        store.add_member("t", Member(agent_id=f"{name}@t", name=name))
    return Mailbox(home, "t")


def test_send_fills_id_and_timestamp(mailbox: Mailbox) -> None:
    [entry] = mailbox.send("alice", "hello", sender="bob", summary="greeting")
    assert entry.msg_id and len(entry.msg_id) == 36
    assert entry.timestamp.endswith("Z")
    raw = json.loads(mailbox.home.inbox_path("t", "alice").read_text())
    assert raw == [{"from": "bob", "text": "hello", "timestamp": entry.timestamp, "read": False,
                    "summary": "greeting", "type": "message", "msg_id": entry.msg_id}]


def test_broadcast_reaches_everyone_but_sender(mailbox: Mailbox) -> None:
    written = mailbox.send("*", "all hands", sender="alice")
    assert len(written) == 2
    assert [e.text for e in mailbox.read("bob")] == ["all hands"]
    assert [e.text for e in mailbox.read("team-lead")] == ["all hands"]
    assert mailbox.read("alice") == []
    assert len({e.msg_id for e in written}) == 2


def test_unknown_recipient_is_an_error_and_creates_nothing(mailbox: Mailbox) -> None:
    with pytest.raises(NotFoundError, match="no member 'carol'"):
        mailbox.send("carol", "hi", sender="alice")
    assert not mailbox.home.inbox_path("t", "carol").exists()


def test_oversized_message_refused(mailbox: Mailbox) -> None:
    with pytest.raises(UsageError, match=str(MAX_MESSAGE_BYTES)):
        mailbox.send("bob", "x" * (MAX_MESSAGE_BYTES + 1), sender="alice")
    assert mailbox.read("bob") == []
    mailbox.send("bob", "x" * MAX_MESSAGE_BYTES, sender="alice")
    assert len(mailbox.read("bob")) == 1


def test_take_returns_undelivered_and_prunes(mailbox: Mailbox) -> None:
    for i in range(3):
        mailbox.send("bob", f"m{i}", sender="alice")
    taken = mailbox.take("bob")
    assert [e.text for e in taken] == ["m0", "m1", "m2"]
    assert json.loads(mailbox.home.inbox_path("t", "bob").read_text()) == []
    assert mailbox.take("bob") == []


def test_read_unread_filter_and_take_skips_read(mailbox: Mailbox) -> None:
    path = mailbox.home.inbox_path("t", "bob")
    mailbox.send("bob", "new", sender="alice")
    doc = json.loads(path.read_text())
    doc.insert(0, {"from": "alice", "text": "old", "timestamp": "2026-01-01T00:00:00.000Z", "read": True})
    path.write_text(json.dumps(doc))
    assert [e.text for e in mailbox.read("bob")] == ["old", "new"]
    assert [e.text for e in mailbox.read("bob", unread_only=True)] == ["new"]
    assert [e.text for e in mailbox.take("bob")] == ["new"]
    assert mailbox.read("bob") == []


def test_acknowledge_prunes_only_given_ids(mailbox: Mailbox) -> None:
    first = mailbox.send("bob", "one", sender="alice")[0]
    mailbox.send("bob", "two", sender="alice")
    assert mailbox.acknowledge("bob", [first.msg_id or ""]) == 1
    assert [e.text for e in mailbox.read("bob")] == ["two"]


@pytest.mark.parametrize("events", [True, False], ids=["inotify", "polling"])
def test_wait_wakes_on_send(mailbox: Mailbox, events: bool) -> None:
    waiter = Mailbox(mailbox.home, "t", events=events)
    assert waiter.wait("bob", 0.05) is False
    result: dict[str, float | bool] = {}

    def wait() -> None:
        start = time.monotonic()
        result["got"] = waiter.wait("bob", 10)
        result["elapsed"] = time.monotonic() - start

    thread = threading.Thread(target=wait)
    thread.start()
    time.sleep(0.1)
    mailbox.send("bob", "wake up", sender="alice")
    thread.join(10)
    assert result["got"] is True
    assert float(result["elapsed"]) < 5  # woken by the send, not by the 10 s timeout


def test_wait_returns_immediately_when_mail_is_there(mailbox: Mailbox) -> None:
    mailbox.send("bob", "already here", sender="alice")
    start = time.monotonic()
    assert mailbox.wait("bob", 30) is True
    assert time.monotonic() - start < 5


def test_sends_are_fsynced_and_emptying_prunes_are_not(mailbox: Mailbox, monkeypatch: pytest.MonkeyPatch) -> None:
    # Power loss cannot be staged here, so the fsync calls themselves are counted.
    import swarm.core.jsonfile as jsonfile

    synced: list[int] = []
    real_fsync = jsonfile.os.fsync
    monkeypatch.setattr(jsonfile.os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    first = mailbox.send("bob", "one", sender="alice")[0]
    mailbox.send("bob", "two", sender="alice")
    assert len(synced) == 2  # every acknowledged send is on disk before send returns
    mailbox.acknowledge("bob", [first.msg_id or ""])
    assert len(synced) == 3  # "two" is still in the inbox: that rewrite must be durable too
    mailbox.take("bob")
    assert len(synced) == 3  # an emptied inbox holds nothing a crash could lose
    assert mailbox.read("bob") == []
