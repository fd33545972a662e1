"""``runtime.lead_inbox.LeadInbox``: the one consumer of the lead's inbox in a process.

It records what reaches the lead once, in order, for every subscriber and for
whoever collects through it — the coordinator's pump and a shutdown waiting
for answers share one; a process that is not the lead's (the CLI) records
without taking. Nothing else in the runtime reads the lead's inbox file.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path

from swarm.core.frames import IdleNotification, ShutdownRejected
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.core.teams import TeamStore
from swarm.runtime import permission_desk
from swarm.runtime.lead_inbox import LeadInbox, LeadMessage, catch_up
from swarm.runtime.lead_pump import LeadPump
from swarm.runtime.up import stop_team
from tests.conftest import both_stores
from tests.forked import run_swarm
from tests.teammate.conftest import REFUSER, teammate_pids, wait_status

T = "2026-12-01T10:00:00.000Z"


def _members(home: Home, team: str, *names: str) -> None:
    for name in names:
        TeamStore(home).add_member(team, Member(agent_id=f"{name}@{team}", name=name, is_active=True))


@both_stores
def test_what_reaches_the_lead_is_recorded_once_in_order_for_every_subscriber(home: Home, team: str) -> None:
    _members(home, team, "w")
    mailbox = Mailbox(home, team)
    inbox = LeadInbox(home, team)
    seen: list[str] = []
    inbox.subscribe(lambda m: seen.append(m.text))
    mailbox.send("team-lead", "one", sender="w")
    mailbox.send_frame("team-lead", IdleNotification(sender="w", timestamp=T, result="two"), sender="w")
    assert inbox.waiting()

    fresh = inbox.pump(5.0)

    assert [(m.kind, m.sender) for m in fresh] == [("message", "w"), ("idle", "w")]
    assert isinstance(fresh[1].frame, IdleNotification) and fresh[1].frame.result == "two"
    assert inbox.messages == fresh and seen == [m.text for m in fresh]
    assert mailbox.read("team-lead") == [] and not inbox.waiting()  # taken: the lead's process owns its inbox
    assert inbox.collect() == []  # nothing twice
    inbox.close()


@both_stores
def test_two_threads_collecting_at_once_lose_nothing_and_record_nothing_twice(home: Home, team: str) -> None:
    _members(home, team, "w")
    mailbox = Mailbox(home, team)
    inbox = LeadInbox(home, team)
    heard: list[LeadMessage] = []
    inbox.subscribe(heard.append)
    sent = [f"m{n}" for n in range(200)]
    stop = threading.Event()

    def collect() -> None:
        while not stop.is_set():
            inbox.collect()

    collectors = [threading.Thread(target=collect) for _ in range(2)]
    for thread in collectors:
        thread.start()
    try:
        for text in sent:
            mailbox.send("team-lead", text, sender="w")
    finally:
        stop.set()
        for thread in collectors:
            thread.join()
    inbox.collect()
    assert [m.text for m in inbox.recorded()] == sent  # every one, once, in the order sent
    assert heard == inbox.messages


@both_stores
def test_a_process_that_is_not_the_leads_records_without_taking(home: Home, team: str) -> None:
    _members(home, team, "w")
    mailbox = Mailbox(home, team)
    mailbox.send("team-lead", "first", sender="w")
    observer = LeadInbox(home, team, prune=False)
    assert [m.text for m in observer.collect()] == ["first"]
    mailbox.send("team-lead", "second", sender="w")
    assert observer.waiting()
    assert [m.text for m in observer.collect()] == ["second"] and not observer.waiting()
    assert [e.text for e in mailbox.read("team-lead")] == ["first", "second"]  # left for the lead's own process


def test_claude_code_requests_reach_the_desk_through_the_one_consumer_only(home: Home, team: str) -> None:
    """The desk reads no inbox: a Claude Code teammate's requests are pending once the consumer collected
    them — both kinds, permission and plan — and the CLI's ``catch_up`` leaves the inbox as it was."""
    TeamStore(home).add_member(team, Member(agent_id=f"bob@{team}", name="bob", runtime="claude",
                                            backend_type="tmux", tmux_pane_id="%9", pid=4242, status="running"))
    path = home.inbox_path(team, "team-lead")
    entries = [
        {"from": "bob", "text": json.dumps({"type": "permission_request", "request_id": "perm-1-b",
                                            "agent_id": f"bob@{team}", "tool_name": "Bash", "tool_use_id": "t1",
                                            "input": {"command": "make"}}), "timestamp": T, "read": False},
        {"from": "bob", "text": json.dumps({"type": "plan_approval_request", "requestId": "plan_approval-2@bob",
                                            "from": "bob", "timestamp": T, "planContent": "my plan"}),
         "timestamp": T, "read": False},
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(entries))
    assert permission_desk.pending(home, team) == []  # nothing read the inbox yet

    catch_up(home, team)

    assert [(e.agent, e.kind, e.request_id) for e in permission_desk.pending(home, team)] == [
        ("bob", "permission", "perm-1-b"), ("bob", "plan", "plan_approval-2@bob")]
    assert len(json.loads(path.read_text())) == 2
    catch_up(home, team)
    assert len(permission_desk.pending(home, team)) == 2  # recorded once


@both_stores
def test_a_shutdown_hears_the_answer_the_coordinators_pump_took(
        home: Home, team: str, tmp_path: Path, start: Callable[..., Member]) -> None:
    """The coordinator pumps on its own thread, woken by whatever arrives, while a shutdown waits on the same
    ``LeadInbox``: whichever of them takes the teammate's ``shutdown_rejected``, it is reported, and recorded once."""
    book = tmp_path / "refuser.toml"
    book.write_text(REFUSER)
    start("mule", "hello", book=book)
    wait_status(home, team, "mule", "idle")
    coordinator = LeadPump(home, team)
    coordinator.pump(0)  # its first idle notification
    stop = threading.Event()

    def pump() -> None:
        while not stop.is_set():
            coordinator.pump(30.0)

    pumping = threading.Thread(target=pump, name="pump")
    pumping.start()
    try:
        [outcome] = stop_team(home, team, dict(os.environ), timeout=8.0, inbox=coordinator.inbox)
    finally:
        stop.set()
        Mailbox(home, team).send("team-lead", "wake up", sender="mule")  # ends the pump's wait
        pumping.join()
        coordinator.close()
    assert (outcome.result, outcome.detail) == ("rejected", "still merging")
    member = TeamStore(home).get(team).member("mule")
    assert member is not None and member.status != "killed" and len(teammate_pids(home)) == 1
    rejections = [m for m in coordinator.messages if isinstance(m.frame, ShutdownRejected)]
    assert len(rejections) == 1 and rejections[0].kind == "shutdown_rejected"


def test_swarm_shutdown_with_no_coordinator_is_the_one_consumer_and_leaves_the_inbox(
        home: Home, team: str, tmp_path: Path, start: Callable[..., Member]) -> None:
    book = tmp_path / "refuser.toml"
    book.write_text(REFUSER)
    start("mule", "hello", book=book)
    wait_status(home, team, "mule", "idle")
    result = run_swarm(["shutdown", "mule", "--team", team, "--timeout", "10"], timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "mule: rejected (still merging)"
    texts = [e.text for e in Mailbox(home, team).read("team-lead")]
    assert any(re.search(r'"type": ?"shutdown_rejected"', t) for t in texts)  # still there for the lead


def test_no_module_of_the_runtime_but_lead_inbox_reads_the_leads_inbox() -> None:
    """The file has one reader in the runtime: every take, read, pending and watch of it is in lead_inbox.py."""
    runtime = Path(__file__).parents[2] / "swarm" / "runtime"
    readers = [path.name for path in sorted(runtime.glob("*.py")) if path.name != "lead_inbox.py"
               and re.search(r"\.(read|pending|take|watcher|acknowledge)\(\s*LEAD_NAME", path.read_text())]
    assert readers == []
