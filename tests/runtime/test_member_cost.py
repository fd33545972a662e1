"""One owner for a member's cost: the team ledger. A teammate's live events, ``swarm top``'s rows and ``swarm status``
show the same figure, also when the ledger holds spend from before the teammate's current process (a restart)."""

from __future__ import annotations

from collections.abc import Callable

from swarm.agent.live_events import EventReader, LiveEvent
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.models.messages import Usage
from swarm.models.team_gate import TeamGate
from swarm.runtime.costs import team_cost
from swarm.runtime.overview import TeamOverview
from swarm.runtime.status import team_status
from tests.backends.helpers import retry_until
from tests.teammate.conftest import wait_status

EARLIER = Usage(input_tokens=100_000)
"""What an earlier process of the teammate spent: $0.30 at claude-sonnet-4-6's $3 per million input tokens."""


def _events(home: Home, team: str, name: str) -> list[LiveEvent]:
    reader = EventReader(home.events_path(team, name))
    try:
        return reader.history()
    finally:
        reader.close()


def test_top_status_and_the_live_events_show_the_ledgers_cost_restarts_and_subagents_included(
        home: Home, team: str, start: Callable[..., Member]) -> None:
    TeamGate(home.gate_dir(team), "ann").charge("claude-sonnet-4-6", EARLIER)  # before this process of ann
    earlier = team_cost(home, team).by_member["ann"]
    assert earlier == 0.3
    start("ann", "ping one")
    # the first turn's end, not the first idle: ann is idle once when it joins, before its prompt's turn (waiting
    # for that one let "ping two" below arrive mid-turn, answered in the same turn: one turn_end, not two)
    retry_until(lambda: sum(e.type == "turn_end" for e in _events(home, team, "ann")) == 1, 15,
                what="ann's first turn to end")
    wait_status(home, team, "ann", "idle")
    retry_until(lambda: [e.state for e in _events(home, team, "ann") if e.type == "state"][-1] == "idle", 10,
                what="ann's idle state event after its turn")
    states = [e for e in _events(home, team, "ann") if e.type == "state"]
    assert states[-1].cost_usd == earlier  # not what this process's own (scripted, unpriced) calls cost: nothing

    overview = TeamOverview(home, team)
    try:
        [row] = overview.rows()
        assert row.name == "ann" and row.cost_usd == earlier
        TeamGate(home.gate_dir(team), "ann").charge("claude-sonnet-4-6", EARLIER)  # e.g. one of ann's subagents
        assert overview.wait(5.0)  # a spend is a change top redraws on
        [row] = overview.rows()
        assert row.cost_usd == team_cost(home, team).by_member["ann"] == 0.6
        assert overview.cost().line() == "$0.6000"
    finally:
        overview.close()
    assert next(s for s in team_status(home, team) if s.name == "ann").cost_usd == 0.6

    Mailbox(home, team).send("ann", "ping two", sender="team-lead")
    retry_until(lambda: sum(e.type == "turn_end" for e in _events(home, team, "ann")) == 2, 15, what="ann's 2nd turn")
    events = _events(home, team, "ann")
    assert [e for e in events if e.type == "state"][-1].cost_usd == 0.6
    assert [e.cost_usd for e in events if e.type == "turn_end"][-1] is None  # this turn itself spent nothing
