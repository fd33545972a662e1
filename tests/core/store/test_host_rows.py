"""Spawn request rows: a take is safe to repeat (a host whose take's commit was cut off by a restart takes the same
row again), and never takes another host's row."""

from __future__ import annotations

from swarm.core.home import Home
from swarm.core.store import database
from swarm.core.store.postgres.hosts import HostRows
from tests.fakes import pg_cluster


def test_a_take_whose_outcome_was_lost_takes_the_same_row_again_and_no_other_hosts(home: Home,
                                                                                  postgres_url: str) -> None:
    rows = HostRows(database(home, pg_cluster.fresh_schema(postgres_url)))
    first = rows.submit("t", "ann", "h1", [], {"n": 1}, "sig")
    second = rows.submit("t", "bob", "h1", [], {"n": 2}, "sig")
    other = rows.submit("t", "cat", "h2", [], {"n": 3}, "sig")
    taken = rows.take("h1", [], [])
    assert taken is not None and taken.id == first
    # the commit went through but the host never heard (the connection was cut): it takes again
    again = rows.take("h1", [], [])
    assert again is not None and again.id == first and again.taken_by == "h1"
    rows.settle(first, "started")
    following = rows.take("h1", [], [])
    assert following is not None and following.id == second
    rows.settle(second, "refused", "no")
    assert rows.take("h1", [], []) is None  # h2's row stays h2's
    theirs = rows.take("h2", [], [])
    assert theirs is not None and theirs.id == other
