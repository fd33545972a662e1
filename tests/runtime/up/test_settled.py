"""When the lead may call its team settled: never while a teammate is taking a message.

A teammate takes a message in this order: it marks itself busy, records the
message, then prunes it from its inbox. The race: the coordinator reads the
teammate's status (idle, from before), the teammate goes busy and prunes, then
the coordinator reads the inbox (empty). Here the teammate's steps run at
exactly that moment, from inside the coordinator's first inbox read.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from swarm.core.clock import now_ms
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox, delivery_key
from swarm.core.protocol import Activity, Member
from swarm.core.teams import TeamStore
from swarm.runtime.lead_pump import LeadPump


@pytest.fixture
def coordinator(home: Home, tmp_path: Path) -> LeadPump:
    store = TeamStore(home)
    store.create("t")
    store.add_member("t", Member(agent_id="w@t", name="w", cwd=str(tmp_path), is_active=True, status="idle"))
    store.set_activity("t", "w", Activity(status="idle", last_activity=now_ms(), tokens=10))
    made = LeadPump(home, "t")
    made.idle_seen.add("w")  # its first turn ended and the lead saw it
    return made


def test_a_quiet_team_is_settled(coordinator: LeadPump) -> None:
    try:
        assert coordinator.settled()
    finally:
        coordinator.close()


def test_a_message_taken_between_the_reads_is_never_missed(coordinator: LeadPump, home: Home) -> None:
    mailbox = Mailbox(home, "t")
    [message] = mailbox.send("w", "next task", sender="team-lead")
    reads = coordinator.mailbox.pending

    def pending_while_w_takes_it(agent: str):  # type: ignore[no-untyped-def]
        if agent == "w" and mailbox.pending("w"):  # the teammate's own steps, in its order
            TeamStore(home).set_activity("t", "w", Activity(status="busy", last_activity=now_ms(), tokens=10))
            mailbox.acknowledge("w", [delivery_key(message)])
        return reads(agent)

    coordinator.mailbox.pending = pending_while_w_takes_it  # type: ignore[method-assign]
    try:
        assert not coordinator.settled()  # w is at work on "next task"
        assert not mailbox.pending("w")  # (the message was taken during the check)
    finally:
        coordinator.close()


def test_a_turn_that_ends_between_the_two_readings_is_seen(coordinator: LeadPump, home: Home) -> None:
    calls = {"n": 0}
    reads = coordinator.mailbox.pending

    def pending_with_a_whole_turn_in_between(agent: str):  # type: ignore[no-untyped-def]
        calls["n"] += agent == "w"
        if agent == "w" and calls["n"] == 2:  # the second reading: w took a message, worked and went idle again
            TeamStore(home).set_activity("t", "w", Activity(status="idle", last_activity=now_ms() + 1, tokens=25))
        return reads(agent)

    coordinator.mailbox.pending = pending_with_a_whole_turn_in_between  # type: ignore[method-assign]
    try:
        assert not coordinator.settled()  # something moved: look again later
        assert coordinator.settled()  # and now it is quiet
    finally:
        coordinator.close()
