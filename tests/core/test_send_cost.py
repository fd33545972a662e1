"""A send's and a take's CPU, counted (not timed): no ``Path`` is built per message.

CPython's ``pathlib`` parses every path it builds (``with_name``, ``/``,
``with_suffix``): a few microseconds each, and a send used to build eleven
(the lock's flock file, its parked directory three times, the guarded file
twice, the temp file, the lock, the team file through three joins). The lock
cycle, the temp file, the spool's items and the team file's path are now
strings or built once per file, so a steady send and take build none.
"""

from __future__ import annotations

import collections
import os
import pathlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.core.teams import TeamStore
from tests.core.test_spool import _hold_lock

BUILDERS = ("with_name", "with_suffix", "__truediv__", "joinpath", "relative_to", "__rtruediv__")


@pytest.fixture
def mailbox(home: Home) -> Mailbox:
    store = TeamStore(home)
    store.create("t")
    store.add_member("t", Member(agent_id="bob@t", name="bob"))
    return Mailbox(home, "t")


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> Iterator[collections.Counter[str]]:
    """Counts, by method, the paths derived from another (each parses its parts) while the test runs."""
    counts: collections.Counter[str] = collections.Counter()
    for name in BUILDERS:
        original = getattr(pathlib.PurePath, name)

        def counted(*args: Any, _original: Any = original, _name: str = name, **kwargs: Any) -> Any:
            counts[_name] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(pathlib.PurePath, name, counted)
    yield counts


def _warm(mailbox: Mailbox) -> None:
    """The first send and take of a process build each file's paths once; those are not per message."""
    mailbox.send("bob", "warm", sender="alice")
    mailbox.take("bob")


def test_a_steady_send_and_take_build_no_path(mailbox: Mailbox, built: collections.Counter[str]) -> None:
    _warm(mailbox)
    built.clear()
    for i in range(4):
        mailbox.send("bob", f"m{i}", sender="alice")
    assert [e.text for e in mailbox.take("bob")] == ["m0", "m1", "m2", "m3"]
    assert not built, f"paths built for 4 sends and a take: {dict(built)}"


def test_an_append_through_the_spool_builds_no_path(mailbox: Mailbox, built: collections.Counter[str]) -> None:
    """A send that waits behind a held lock drops its entry in the spool, and the holder's next commit claims it."""
    _warm(mailbox)
    inbox = mailbox.home.inbox_path("t", "bob")
    spool = os.fspath(inbox.with_name(f".{inbox.name}.spool"))
    release, holder = _hold_lock(inbox)
    built.clear()
    sender = threading.Thread(target=mailbox.send, args=("bob", "queued"), kwargs={"sender": "alice"})
    sender.start()
    try:
        deadline = time.monotonic() + 10
        while not (os.path.isdir(spool) and os.listdir(spool)):
            assert time.monotonic() < deadline, "the waiting send never spooled its entry"
            time.sleep(0.005)
    finally:
        release.set()
        holder.join(10)
    sender.join(10)
    assert [e.text for e in mailbox.take("bob")] == ["queued"]
    assert not built, f"paths built by a spooled append and its commit: {dict(built)}"
