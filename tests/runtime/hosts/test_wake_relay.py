"""A host's one LISTEN session wakes its teammates: waiters in the host's home hold no LISTEN connection of their
own, miss no send made after they were built, read again after the relay's connection was lost, and LISTEN
themselves once the relay is gone. Real server, real inotify, the relay as `swarm host serve` runs it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.core.store import database
from swarm.core.store.postgres import relay as relay_module
from swarm.core.store.postgres.relay import RelayedWatcher, parse, relay_dir
from swarm.core.teams import TeamStore
from swarm.core.watch import ChangeWatcher
from swarm.errors import StorageError, UsageError
from swarm.runtime.hosts.wake_relay import WakeRelay
from tests.fakes import pg_cluster

NAMES = ("ann", "bob", "cy")


@pytest.fixture
def team(home: Home, postgres_url: str) -> str:
    url = pg_cluster.fresh_schema(postgres_url)
    TeamStore(home).create("crew", cwd=str(home.root), store=url)
    for name in NAMES:
        TeamStore(home).add_member("crew", Member(agent_id=f"{name}@crew", name=name, is_active=True))
    return url


@pytest.fixture
def relay(home: Home, team: str) -> Iterator[WakeRelay]:
    running = WakeRelay(database(home, team), relay_dir(home.run_dir))
    running.start()
    yield running
    running.close()


def test_three_waiters_share_the_hosts_one_listen_session_and_each_is_woken(home: Home, team: str,
                                                                           relay: WakeRelay) -> None:
    mailbox = Mailbox(home, "crew")
    watchers = {"ann": mailbox.watcher("ann")}  # acknowledged: the relay is connected and listening
    try:
        mailbox.pending("ann")
        before = len(pg_cluster.own_ports(team))
        assert before >= 1  # the relay's own LISTEN session, in this process here
        watchers.update({name: mailbox.watcher(name) for name in NAMES[1:]})
        assert all(isinstance(w, RelayedWatcher) and w.relayed for w in watchers.values())
        assert len(pg_cluster.own_ports(team)) == before  # no LISTEN session of their own
        for w in watchers.values():
            w.wait(0.2)  # drain the acknowledgement
        Mailbox(home, "crew").send("bob", "for bob", sender="team-lead")
        began = time.monotonic()
        assert watchers["bob"].wait(5.0)
        assert time.monotonic() - began < 2.0
        assert not watchers["ann"].wait(0.3)  # a send to bob wakes only bob
        assert [e.text for e in mailbox.pending("bob")] == ["for bob"]
    finally:
        for w in watchers.values():
            w.close()
    assert not [p for p in relay_dir(home.run_dir).iterdir() if p.name != "relay.lock"]  # closed: files gone


class SlowRelay(WakeRelay):
    """A relay on a loaded machine: it takes 0.3 s from seeing a new waiter to LISTENing for it."""

    def _sync(self, conn: Any, listening: set[str], *, wake_all: bool) -> None:
        if any((found := parse(name)) is not None and found[0] not in listening for name in self._files()):
            time.sleep(0.3)
        super()._sync(conn, listening, wake_all=wake_all)


def test_a_send_right_after_a_waiter_is_built_is_never_missed(home: Home, team: str) -> None:
    slow = SlowRelay(database(home, team), relay_dir(home.run_dir))
    slow.start()
    try:
        for n in range(4):
            mailbox = Mailbox(home, "crew")
            watcher = mailbox.watcher("cy")
            try:
                assert isinstance(watcher, RelayedWatcher) and watcher.relayed
                watcher.wait(0.05)  # (its own file's creation)
                assert not mailbox.pending("cy")  # read, then wait: what a teammate does
                Mailbox(home, "crew").send("cy", f"m{n}", sender="team-lead")
                assert watcher.wait(3.0), f"send {n}, made after the waiter was built, woke nothing"
                assert [e.text for e in mailbox.pending("cy")] == [f"m{n}"]
                mailbox.acknowledge("cy", [e.msg_id for e in mailbox.pending("cy")])
            finally:
                watcher.close()
    finally:
        slow.close()


def test_the_relays_lost_connection_wakes_every_waiter_to_read_again(home: Home, team: str,
                                                                   relay: WakeRelay) -> None:
    mailbox = Mailbox(home, "crew")
    watcher = mailbox.watcher("ann")
    try:
        watcher.wait(0.2)
        with database(home, team).connect(autocommit=True) as admin:
            killed = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                                   "client_port = ANY(%s) AND query ILIKE 'LISTEN%%'",
                                   (pg_cluster.own_ports(team),)).fetchall()
        assert killed
        Mailbox(home, "crew").send("ann", "sent while the relay was away", sender="team-lead")
        assert watcher.wait(10.0)  # reconnected: every waiter reads again
        assert [e.text for e in mailbox.pending("ann")] == ["sent while the relay was away"]
        mailbox.acknowledge("ann", [e.msg_id for e in mailbox.pending("ann")])
        watcher.wait(0.3)
        Mailbox(home, "crew").send("ann", "after", sender="team-lead")
        assert watcher.wait(5.0)  # and it relays again
    finally:
        watcher.close()


def test_a_waiter_whose_relay_went_away_listens_itself(home: Home, team: str, postgres_url: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(relay_module, "RELAY_CHECK", 0.3)
    running = WakeRelay(database(home, team), relay_dir(home.run_dir))
    running.start()
    mailbox = Mailbox(home, "crew")
    watcher = mailbox.watcher("bob")
    try:
        assert isinstance(watcher, RelayedWatcher) and watcher.relayed
        watcher.wait(0.2)
        running.close()
        assert watcher.wait(5.0)  # noticed: read again
        assert not watcher.relayed
        Mailbox(home, "crew").send("bob", "after the relay", sender="team-lead")
        assert watcher.wait(5.0)
    finally:
        watcher.close()


def test_without_a_relay_a_waiter_listens_itself(home: Home, team: str) -> None:
    watcher = Mailbox(home, "crew").watcher("bob")
    try:
        assert not isinstance(watcher, RelayedWatcher)
        Mailbox(home, "crew").send("bob", "hi", sender="team-lead")
        assert watcher.wait(5.0)
    finally:
        watcher.close()


def test_one_relay_per_home(home: Home, team: str, relay: WakeRelay) -> None:
    with pytest.raises(UsageError, match="one host per home"):
        WakeRelay(database(home, team), relay_dir(home.run_dir))


def test_files_of_gone_processes_are_removed_and_their_channel_left(home: Home, team: str, relay: WakeRelay,
                                                                   tmp_path: Path) -> None:
    directory = relay_dir(home.run_dir)
    stale = directory / "swarm_0123456789abcdef0123456789abcdef01234567.999999999.0"
    stale.write_bytes(b"")
    deadline = time.monotonic() + 5
    while stale.exists():
        assert time.monotonic() < deadline, "a gone process's file stayed"
        time.sleep(0.05)


def test_a_waiter_cut_off_from_relay_and_database_alike_reads_again_instead_of_failing(
        home: Home, team: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(relay_module, "RELAY_CHECK", 0.2)
    running = WakeRelay(database(home, team), relay_dir(home.run_dir))
    running.start()

    def unreachable() -> ChangeWatcher:
        raise StorageError("could not connect to the database (a partition)")

    watcher = RelayedWatcher(relay_dir(home.run_dir), "swarm_" + "0" * 40, unreachable)
    try:
        assert watcher.relayed
        watcher.wait(0.1)
        running.close()
        assert watcher.wait(3.0)  # no exception into the teammate's loop: it reads again (and waits there)
        assert watcher.relayed  # tries to LISTEN itself again at the next check
    finally:
        watcher.close()
