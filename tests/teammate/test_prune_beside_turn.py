"""The prune before a turn runs beside the turn, and the teammate looks idle only once it is done.

A real teammate process. The test holds the teammate's inbox lock (as a slow
writer would) while a message waits in it: the teammate records the message,
answers it (its reply reaches the lead while the lock is still held), and
stays busy until the prune behind it could run; then it is idle with an empty
inbox, so "idle and an empty inbox" still means done.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from swarm.core.home import Home
from swarm.core.jsonfile import lock_of
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.core.teams import TeamStore
from tests.backends.helpers import retry_until
from tests.teammate.conftest import lead_texts, wait_status


def _status(home: Home, team: str) -> str | None:
    member = TeamStore(home).get(team).member("w")
    return member.status if member else None


def test_a_turn_answers_while_its_prune_waits_and_idle_comes_only_after_it(
        home: Home, team: str, start: Callable[..., Member]) -> None:
    start("w", prompt="ping first")
    retry_until(lambda: "pong first from w" in lead_texts(home, team), 30, what="the first answer")
    wait_status(home, team, "w", "idle")
    mailbox = Mailbox(home, team)
    inbox = home.inbox_path(team, "w")
    for attempt in range(5):  # the test must take the lock before the teammate's prune does (it nearly always does)
        token = f"second{attempt}"
        # the last attempt's turn over first: a ping arriving mid-turn is pruned by the turn itself, and that
        # prune would wait for the lock held below while the test waits for its answer
        retry_until(lambda: _status(home, team) == "idle" and not mailbox.read("w"), 30, what="an idle teammate")
        mailbox.send("w", f"ping {token}", sender="team-lead")
        with lock_of(inbox, timeout=10):
            if not any(e.text == f"ping {token}" for e in mailbox.read("w")):
                continue  # the prune was first: nothing to show with this one
            retry_until(lambda t=token: f"pong {t} from w" in lead_texts(home, team), 10,
                        what="the answer, while the prune waits for the lock")
            for _ in range(10):  # the turn is over, its prune is not: still busy
                assert _status(home, team) == "busy"
                time.sleep(0.05)
            assert any(e.text == f"ping {token}" for e in mailbox.read("w"))
        break
    else:
        raise AssertionError("the teammate pruned before the test could take the lock, five times")
    wait_status(home, team, "w", "idle")
    assert mailbox.read("w") == []
