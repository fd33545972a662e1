"""A stop signal that cuts in while a lock is held never stalls the teammate's end.

The session runs in this process (the offline scripted model). Its inbox read
is replaced by one that takes the lead inbox's lock and is then cut short by
the signal's exception before it could release it: what a SIGTERM does when it
arrives at the first instruction of a lock's release, or of a ``with`` block's
exit. While that exception lives, its traceback keeps the frame, and the lock,
alive. The end's own writes (the member marked gone, the lead told) go to that
very inbox, so ending while the exception was still alive waited out the whole
lock timeout (~15 s) and then could not tell the lead.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from swarm.core.flock import acquire
from swarm.core.frames import TeammateTerminated, entry_frame
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.names import LEAD_NAME
from swarm.core.protocol import Member
from swarm.core.teams import TeamStore
from swarm.teammate.config import TeammateConfig
from swarm.teammate.session import TeammateSession, Terminated

BOOK = """
[[rules]]
match = 'ping'
text = "pong"
"""


def test_a_signal_cutting_in_while_a_lock_is_held_does_not_stall_the_end(
        home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    TeamStore(home).create("t")
    TeamStore(home).add_member("t", Member(agent_id="w@t", name="w", is_active=True, status="idle"))
    book = tmp_path / "book.toml"
    book.write_text(BOOK)
    work = tmp_path / "work"
    work.mkdir()
    session = TeammateSession(TeammateConfig(team="t", name="w", agent_id="w@t", cwd=work, playbook=book), home, {})
    lead_inbox = home.inbox_path("t", LEAD_NAME)
    lead_inbox.parent.mkdir(parents=True, exist_ok=True)

    def cut_short() -> None:
        held = acquire(lead_inbox.with_name(f"{lead_inbox.name}.lock"), 1.0)  # taken; its release never comes
        assert held.directory.is_dir()
        raise Terminated("SIGTERM")

    monkeypatch.setattr(session.delivery, "collect", cut_short)
    # its end stops its process's children: here pytest's worker's, the session-wide servers of other tests
    monkeypatch.setattr("swarm.teammate.session.stop_children", lambda ctx, grace: None)
    start = time.monotonic()
    try:
        with pytest.raises(Terminated, match="SIGTERM"):
            session.run()
    finally:
        session.spec.provider.close()
    took = time.monotonic() - start
    assert took < 5, f"the end waited {took:.1f}s on a lock its own process held"
    member = TeamStore(home).get("t").member("w")
    assert member is not None and not member.is_active and member.status == "dead"
    told = [f for f in (entry_frame(e) for e in Mailbox(home, "t").read(LEAD_NAME))
            if isinstance(f, TeammateTerminated)]
    assert len(told) == 1 and "SIGTERM" in told[0].message  # the lead was told, once
