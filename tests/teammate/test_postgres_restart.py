"""Teammates of a PostgreSQL team live through the server going away: a clean restart and a crash (``pg_ctl
-m immediate``, no shutdown checkpoint: recovery from the WAL). Each process reconnects and goes on; what was
acknowledged is there; nothing runs twice. A cluster of this module's own: restarting it disturbs nobody."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from swarm.core.frames import IdleNotification, entry_frame
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.core.tasks import TaskStore
from swarm.runtime.shutdown import shutdown
from tests.backends.helpers import retry_until
from tests.fakes import pg_cluster
from tests.teammate.conftest import lead_texts, teammate_pids


@pytest.fixture(scope="module")
def own_cluster() -> Iterator[Path]:
    pytest.importorskip("psycopg")
    try:
        directory, base = pg_cluster.start()
    except (RuntimeError, OSError) as exc:
        pytest.skip(f"no PostgreSQL: {exc}")
    (directory / "url").write_text(base)
    try:
        yield directory
    finally:
        pg_cluster.stop(directory)


@pytest.fixture
def team_store(own_cluster: Path) -> str:
    """This module's teams live in its own cluster (overrides tests/conftest.py's)."""
    return pg_cluster.fresh_schema((own_cluster / "url").read_text())


@pytest.mark.parametrize("mode", ["fast", "immediate"])
def test_teammates_go_on_after_the_server_restarts(mode: str, home: Home, team: str, own_cluster: Path,
                                                   start: Callable[..., Member]) -> None:
    names = ["ann", "ben"]
    for name in names:
        start(name, f"ping first{name}")
    mailbox = Mailbox(home, team)

    def idles() -> list[str]:
        return sorted(f.sender for f in map(entry_frame, mailbox.read("team-lead")) if isinstance(f, IdleNotification))

    retry_until(lambda: len(idles()) == 2, 20, what="each teammate's first turn to end")
    tasks = TaskStore(home, team)
    task = tasks.create("survive the restart")
    tasks.claim(task.id, "ann")

    pg_cluster.pg_ctl(own_cluster, "restart", "-m", mode)  # every connection of every process is cut

    for name in names:
        mailbox.send(name, f"ping second{name}", sender="team-lead")  # this process reconnects too
    expected = {f"pong {w}{n} from {n}" for n in names for w in ("first", "second")}
    retry_until(lambda: expected <= set(lead_texts(home, team)), 30, what="the pongs after the restart")
    texts = lead_texts(home, team)
    assert all(texts.count(text) == 1 for text in expected)  # nothing delivered (so answered) twice
    retry_until(lambda: len(idles()) >= 4, 20, what="each teammate idle after each turn")
    assert idles() == sorted(names * 2)
    assert tasks.get(task.id).owner == "ann"  # acknowledged before the restart: still there

    outcomes = shutdown(home, team, None, dict(os.environ), timeout=15)
    assert sorted((o.name, o.result) for o in outcomes) == [(n, "approved") for n in names]
    assert teammate_pids(home) == []
