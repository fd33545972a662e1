"""The PostgreSQL store under attack: racing claimers, a lost LISTEN connection, a server restart mid-run, a
password in the URL, and the schema's versions. Real server (``postgres_url``), real processes."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.core.store import database, locate
from swarm.core.store.postgres.database import Database
from swarm.core.store.postgres.schema import VERSION, migrate
from swarm.core.tasks import TaskStore
from swarm.core.teams import TeamStore
from swarm.errors import StorageError
from tests.core.conftest import Workers
from tests.fakes import pg_cluster
from tests.forked import run_swarm

SECRET = "s3cr3t-Pw"


def _team(home: Home, url: str, name: str = "crew", members: tuple[str, ...] = ("bob",)) -> None:
    teams = TeamStore(home)
    teams.create(name, cwd=str(home.root), store=url)
    for member in members:
        teams.add_member(name, Member(agent_id=f"{member}@{name}", name=member, is_active=True))


@pytest.fixture
def url(postgres_url: str) -> str:
    return pg_cluster.fresh_schema(postgres_url)


@pytest.fixture
def workers(home: Home, tmp_path: Path) -> Iterator[Workers]:
    pool = Workers(home, tmp_path / "workers")
    try:
        yield pool
    finally:
        pool.stop_all()


CLAIMER = """
from swarm.core.tasks import TaskStore
from swarm.errors import ConflictError
store = TaskStore(home, "crew")
me, log = sys.argv[1], open_log(sys.argv[2])
say("ready")
for task in range(1, int(sys.argv[3]) + 1):
    sys.stdin.readline()
    try:
        store.claim(str(task), me)
        record(log, {"task": task, "won": me})
    except ConflictError as exc:
        record(log, {"task": task, "lost": me, "why": str(exc)})
    say("next")
"""


def test_two_claimers_racing_for_each_task_exactly_one_wins(home: Home, url: str, workers: Workers,
                                                           tmp_path: Path) -> None:
    _team(home, url, members=("ann", "bob"))
    rounds = 30
    tasks = TaskStore(home, "crew")
    for n in range(rounds):
        tasks.create(f"task {n}")
    log = tmp_path / "claims.jsonl"
    racers = [workers.start(name, CLAIMER, name, log, rounds) for name in ("ann", "bob")]
    for racer in racers:
        racer.expect("ready")
    for _ in range(rounds):
        for racer in racers:
            racer.tell()  # both go at once
        for racer in racers:
            racer.expect("next")
    events = [json.loads(line) for line in log.read_text().splitlines()]
    winners = Counter(e["task"] for e in events if "won" in e)
    assert winners == Counter({n: 1 for n in range(1, rounds + 1)})
    for loss in (e for e in events if "lost" in e):
        other = next(e["won"] for e in events if e.get("task") == loss["task"] and "won" in e)
        assert loss["why"] == f"task {loss['task']} is already claimed by {other}"
    assert {t.id: t.owner for t in tasks.list()} == {str(e["task"]): e["won"] for e in events if "won" in e}


def test_a_receiver_whose_connection_dropped_still_gets_what_was_sent_meanwhile(home: Home, url: str) -> None:
    _team(home, url)
    receiver = Mailbox(home, "crew")
    watcher = receiver.watcher("bob")
    try:
        backend = watcher._conn.info.backend_pid  # type: ignore[attr-defined]  # the LISTEN connection
        with database(home, url).connect(autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (backend,))
        Mailbox(home, "crew").send("bob", "sent while nobody listened", sender="team-lead")
        began = time.monotonic()
        assert watcher.wait(10.0)  # the lost connection is noticed, made again, and reported as a change
        assert time.monotonic() - began < 5.0
        assert [e.text for e in receiver.pending("bob")] == ["sent while nobody listened"]
        assert watcher._conn.info.backend_pid != backend  # type: ignore[attr-defined]
        Mailbox(home, "crew").send("bob", "after", sender="team-lead")
        assert watcher.wait(10.0)  # and it listens again
    finally:
        watcher.close()


SENDER = """
log = open_log(sys.argv[1])
say("ready")
for n in range(int(sys.argv[2])):
    [entry] = mb.send("bob", f"m{n}", sender="team-lead")
    record(log, entry.msg_id)  # acknowledged by the database: it must arrive
    time.sleep(0.005)
say("done")
"""

RECEIVER = """
log = open_log(sys.argv[1])
want = int(sys.argv[2])
seen, again = set(), 0
watcher = mb.watcher("bob")
say("ready")
while len(seen) < want:
    fresh = []
    for entry in mb.pending("bob"):
        if entry.msg_id in seen:
            again += 1  # its acknowledgement was lost with the connection: recorded already, not run twice
        else:
            fresh.append(entry.msg_id)
    record(log, *fresh)  # recorded (fsynced) before it is acknowledged, as a teammate's transcript
    seen.update(fresh)
    mb.acknowledge("bob", [*fresh])
    if len(seen) < want:
        watcher.wait(1.0)
say(f"done {again}")
"""


@pytest.fixture(scope="module")
def own_cluster() -> Iterator[tuple[Path, str]]:
    """A cluster of this module's own: it is restarted, which must not disturb the other tests."""
    pytest.importorskip("psycopg")
    try:
        directory, base = pg_cluster.start()
    except (RuntimeError, OSError) as exc:
        pytest.skip(f"no PostgreSQL: {exc}")
    try:
        yield directory, base
    finally:
        pg_cluster.stop(directory)


@pytest.mark.parametrize("mode", ["fast", "immediate"])  # immediate: a crash, recovered from the WAL
def test_a_server_restart_mid_run_loses_nothing_acknowledged_and_delivers_nothing_twice(
        mode: str, home: Home, own_cluster: tuple[Path, str], workers: Workers, tmp_path: Path) -> None:
    directory, base = own_cluster
    url = pg_cluster.fresh_schema(base)
    _team(home, url)
    count = 300
    sent_log, got_log = tmp_path / "sent.jsonl", tmp_path / "got.jsonl"
    receiver = workers.start("receiver", RECEIVER, got_log, count)
    sender = workers.start("sender", SENDER, sent_log, count)
    receiver.expect("ready")
    sender.expect("ready")
    deadline = time.monotonic() + 30
    while (not sent_log.exists() or len(sent_log.read_text().splitlines()) < count // 3) and time.monotonic() < deadline:
        time.sleep(0.01)
    pg_cluster.pg_ctl(directory, "restart", "-m", mode)  # every connection of both processes is cut
    at_restart = len(sent_log.read_text().splitlines())
    sender.expect("done", timeout=60)
    assert sender.join(30) == 0, sender.stderr()
    receiver.join(60)
    sent = [json.loads(line) for line in sent_log.read_text().splitlines()]
    got = [json.loads(line) for line in got_log.read_text().splitlines()]
    assert len(sent) == count and len(set(sent)) == count
    assert sorted(got) == sorted(sent)  # nothing acknowledged lost, nothing recorded twice
    assert count // 3 <= at_restart < count  # the restart came mid-run
    assert "reconnecting" in sender.stderr() and "reconnecting" in receiver.stderr()  # both lost their link
    assert Mailbox(home, "crew").pending("bob") == []


def test_a_change_that_cannot_be_repeated_is_made_once_after_a_restart_cut_the_idle_connection(
        home: Home, own_cluster: tuple[Path, str]) -> None:
    """The server rolled back nothing of ours (the connection was idle): the change is made, once."""
    directory, base = own_cluster
    _team(home, pg_cluster.fresh_schema(base))
    Mailbox(home, "crew").send("bob", "before", sender="team-lead")
    tasks = TaskStore(home, "crew")
    tasks.create("before")
    pg_cluster.pg_ctl(directory, "restart", "-m", "immediate")
    assert tasks.create("after").id == "2"  # not a StorageError, and not made twice
    TeamStore(home).modify("crew", lambda t: setattr(t, "description", "changed after"))
    pg_cluster.pg_ctl(directory, "restart", "-m", "immediate")
    assert [e.text for e in Mailbox(home, "crew").take("bob")] == ["before"]
    assert [t.subject for t in tasks.list()] == ["before", "after"]
    assert TeamStore(home).get("crew").description == "changed after"


def test_a_password_in_the_url_is_never_shown(home: Home, postgres_url: str,
                                              caplog: pytest.LogCaptureFixture) -> None:
    bad = f"postgresql://swarm:{SECRET}@127.0.0.1:1/swarm"
    with pytest.raises(StorageError) as caught:
        TeamStore(home).create("nowhere", store=bad)
    assert SECRET not in str(caught.value) and "swarm:***@127.0.0.1:1" in str(caught.value)
    assert locate(home, "nowhere") is None  # no record of a team that was not made

    done = run_swarm(["team", "create", "cli", "--store", bad], timeout=60)
    assert done.returncode != 0 and SECRET not in done.stdout + done.stderr and "***" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1

    # a URL that works (trust: the password is not checked) shows it nowhere either, even when the link drops
    schema = pg_cluster.fresh_schema(postgres_url)
    good = schema.replace("postgresql://swarm@", f"postgresql://swarm:{SECRET}@")
    _team(home, good)
    listed = run_swarm(["team", "list"], timeout=60, env=dict(os.environ, SWARM_HOME=str(home.root)))
    assert "crew" in listed.stdout and SECRET not in listed.stdout + listed.stderr
    db = database(home, good)
    with db.connect(autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                      "WHERE application_name = 'swarm' AND pid <> pg_backend_pid() AND client_port = ANY(%s)",
                      (pg_cluster.own_ports(good),))
    caplog.set_level(logging.DEBUG)
    Mailbox(home, "crew").send("bob", "after the drop", sender="team-lead")
    assert [e.text for e in Mailbox(home, "crew").pending("bob")] == ["after the drop"]
    shown = " ".join(f"{r.getMessage()} {r.__dict__}" for r in caplog.records)
    assert "reconnecting" in shown and SECRET not in shown
    assert SECRET not in repr(db.shown) and SECRET not in str(db.error(RuntimeError(f"x {good}"), "test"))


def test_the_schema_is_versioned_and_one_database_holds_many_teams(home: Home, url: str) -> None:
    _team(home, url, "red", ("ann",))
    _team(home, url, "blue", ("ann",))
    db: Database = database(home, url)
    with db.connect() as conn:
        assert conn.execute("SELECT version FROM swarm_schema").fetchall() == [(VERSION,)]
        assert migrate(conn) == VERSION  # a second process finds nothing to do
    Mailbox(home, "red").send("ann", "for red", sender="team-lead")
    TaskStore(home, "blue").create("blue's task")
    assert [e.text for e in Mailbox(home, "red").pending("ann")] == ["for red"]
    assert Mailbox(home, "blue").pending("ann") == []
    assert TaskStore(home, "red").list() == [] and [t.id for t in TaskStore(home, "blue").list()] == ["1"]
    assert [t.name for t in TeamStore(home).list()] == ["blue", "red"]
    TeamStore(home).delete("red", force=True)
    assert [t.name for t in TeamStore(home).list()] == ["blue"]
    assert Mailbox(home, "blue").pending("ann") == [] and len(TaskStore(home, "blue").list()) == 1


def test_a_file_team_never_loads_the_driver_and_writes_no_store_record(home: Home) -> None:
    code = """
import sys
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.core.tasks import TaskStore
from swarm.core.teams import TeamStore
home = Home.from_env()
TeamStore(home).create("files")
TeamStore(home).add_member("files", Member(agent_id="bob@files", name="bob"))
Mailbox(home, "files").send("bob", "hi", sender="team-lead")
TaskStore(home, "files").claim(TaskStore(home, "files").create("x").id, "bob")
assert [t.name for t in TeamStore(home).list()] == ["files"]
print("psycopg" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, SWARM_HOME=str(home.root)))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
    assert not (home.root / "stores").exists() and home.inbox_path("files", "bob").is_file()


def test_processes_meeting_a_fresh_database_at_once_create_the_schema_once(url: str, workers: Workers) -> None:
    code = """
import sys
from swarm.core.store.postgres.database import Database
db = Database(sys.argv[1])
def say(word):
    print(word, flush=True)
say("ready")
sys.stdin.readline()
db.connect().close()
say("done")
"""
    racers = [workers.start(f"m{n}", code, url, prologue=False) for n in range(4)]
    for racer in racers:
        racer.expect("ready")
    for racer in racers:
        racer.tell()
    for racer in racers:
        racer.expect("done", timeout=60)  # none failed on a table another was creating
    with Database(url).connect() as conn:
        assert conn.execute("SELECT version FROM swarm_schema").fetchall() == [(VERSION,)]
