"""The process's view of the team (``swarm.core.team_view``): opened only when changed, never stale."""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Hashable, Iterator
from pathlib import Path

import pytest

from swarm.core import jsonfile, team_view
from swarm.core.clock import now_ms
from swarm.core.document_codecs import TeamCodec
from swarm.core.home import Home
from swarm.core.jsonfile import LockedJsonFile
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Activity, Member, TeamFile
from swarm.core.team_view import TeamView, stable
from swarm.core.teams import TeamStore
from tests.core.conftest import RECIPIENT, TEAM, Workers

Opens = Counter[str]
"""File name -> how many times it was opened for reading."""


@pytest.fixture
def opens(monkeypatch: pytest.MonkeyPatch) -> Iterator[Opens]:
    """Every read of a JSON file (``LockedJsonFile``'s one way to open a file), counted by file name."""
    counted: Opens = Counter()
    real = jsonfile.read_regular

    def counting(path: Path) -> tuple[bytes, int] | None:
        counted[path.name] += 1
        return real(path)

    monkeypatch.setattr(jsonfile, "read_regular", counting)
    yield counted


def wait_settled(*paths: Path) -> None:
    """Until a read of each of ``paths`` is kept (a version younger than the file clock's tick is not)."""
    deadline = time.monotonic() + 5
    while not all(stable(p) for p in paths):
        assert time.monotonic() < deadline, "the files never settled"
        time.sleep(0.001)


def running(home: Home, names: list[str]) -> TeamStore:
    """Team ``crew`` with running members ``names``, each with an activity record."""
    store = TeamStore(home)
    store.create(TEAM)
    for name in names:
        store.add_member(TEAM, Member(agent_id=f"{name}@{TEAM}", name=name, is_active=True, status="idle",
                                      prompt="p" * 10))
        store.set_activity(TEAM, name, Activity(status="idle", last_activity=now_ms(), tokens=1))
    wait_settled(home.config_path(TEAM), *(home.activity_path(TEAM, n) for n in names))
    return store


def test_a_second_read_of_an_unchanged_team_opens_nothing(home: Home, opens: Opens) -> None:
    store = running(home, ["bob", "carol"])
    opens.clear()
    first = store.get(TEAM)
    assert opens == {"config.json": 1, "bob.json": 1, "carol.json": 1}
    opens.clear()
    again = store.get(TEAM)
    assert opens == {}  # no open: nothing changed on disk
    assert again == first
    shared = store.roster(TEAM).current()
    assert store.roster(TEAM).current() is shared  # not parsed again either: the one object is handed out
    assert opens == {}


def test_each_caller_of_get_has_its_own_team(home: Home) -> None:
    """What the view keeps is never handed to a caller that may change it."""
    store = running(home, ["bob"])
    mine = store.get(TEAM)
    mine.members[1].status = "busy"
    mine.members[1].subscriptions.append("x")
    mine.members.clear()
    theirs = store.get(TEAM)
    assert [m.name for m in theirs.members] == ["team-lead", "bob"]
    assert (theirs.members[1].status, theirs.members[1].subscriptions) == ("idle", [])
    assert store.read_file(TEAM) is not store.read_file(TEAM)


def test_every_store_and_mailbox_of_a_home_shares_one_view(home: Home, opens: Opens) -> None:
    running(home, ["bob"])
    assert TeamStore(home).view is TeamStore(home).view is home.kept(TeamView)
    TeamStore(home).get(TEAM)
    opens.clear()
    TeamStore(home).get(TEAM)  # another store, as the 61 places that make one do
    Mailbox(home, TEAM).send(RECIPIENT, "hi", sender="team-lead")  # the recipients come from the same view
    assert opens["config.json"] == 0
    assert Home(home.root).kept(TeamView) is not home.kept(TeamView)  # one view per Home object: per process, as passed down


def test_a_change_by_another_process_is_seen_on_the_next_read(team: Home, workers: Workers) -> None:
    """Another process writes through the normal locked path, the same number of bytes: the next read sees it."""
    store = TeamStore(team)
    store.update_member(TEAM, RECIPIENT, prompt="a" * 20)
    wait_settled(team.config_path(TEAM))
    assert store.read_file(TEAM).member(RECIPIENT).prompt == "a" * 20  # type: ignore[union-attr]
    before = os.stat(team.config_path(TEAM))
    writer = workers.start("writer", f"""
import sys
from swarm.core.home import Home
from swarm.core.teams import TeamStore
print("ready", flush=True)
sys.stdin.readline()
TeamStore(Home.from_env()).update_member({TEAM!r}, {RECIPIENT!r}, prompt="b" * 20)
print("done", flush=True)
""", prologue=False)
    writer.expect("ready")
    assert store.read_file(TEAM).member(RECIPIENT).prompt == "a" * 20  # type: ignore[union-attr]
    writer.tell()
    writer.expect("done")
    assert os.stat(team.config_path(TEAM)).st_size == before.st_size
    assert store.read_file(TEAM).member(RECIPIENT).prompt == "b" * 20  # type: ignore[union-attr]
    assert store.roster(TEAM).current().member(RECIPIENT).prompt == "b" * 20  # type: ignore[union-attr]


def alternate(store: TeamStore, turns: int, identity: Callable[[os.stat_result], Hashable]) -> tuple[int, list[str]]:
    """Write versions of the same size through the locked path, as another process would (the view is not
    told), two between reads of ``store``, for ``turns`` reads. Returns how many read versions had an earlier
    one's ``identity`` (the version two writes on reuses the inode number the one between freed), and what
    each read saw as the description beside what was written last."""
    path = store.home.config_path(TEAM)
    writer = LockedJsonFile(path, TeamCodec(), fsync=False)
    seen: set[Hashable] = set()
    repeats = 0
    stale: list[str] = []
    texts = ("a" * 8, "b" * 8, "c" * 8)
    for turn in range(turns):
        for text in (texts[2 * turn % 3], texts[(2 * turn + 1) % 3]):
            def describe(team: TeamFile | None, text: str = text) -> None:
                assert team is not None
                team.description = text

            writer.update(describe)
        found = identity(os.stat(path))
        repeats += found in seen
        seen.add(found)
        read = store.read_file(TEAM).description
        if read != text:
            stale.append(f"turn {turn}: read {read!r} after {text!r} was written")
    return repeats, stale


def test_same_size_versions_in_quick_succession_are_each_seen(home: Home) -> None:
    """On this machine's filesystem and clock, end to end: no version is taken for an earlier one. (Where
    file times come from the tick clock alone, before Linux 6.13, identities repeat here; with multigrain
    times the view's own stat makes the next change stamp a fine time, and the next test simulates the rest.)"""
    store = TeamStore(home)
    store.create(TEAM)
    _, stale = alternate(store, 300, lambda st: (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    assert stale == []


STEP = 50_000_000
"""ns: the time step of the simulated coarse filesystem."""


def test_a_version_is_kept_only_once_it_settled(home: Home, monkeypatch: pytest.MonkeyPatch, opens: Opens) -> None:
    """A filesystem whose times move in 50 ms steps (file times and the file clock both cut to the step):
    atomic replacements alternate between two inode numbers and many share a step, so a later version
    has an earlier one's identity. None of them is taken for it; and a version that settled is kept."""
    monkeypatch.setattr(team_view, "_signature", lambda st: team_view.Signature(
        st.st_ino, st.st_size, st.st_mtime_ns - st.st_mtime_ns % STEP, st.st_ctime_ns - st.st_ctime_ns % STEP))
    real_clock = team_view._file_time_now
    monkeypatch.setattr(team_view, "_file_time_now", lambda: real_clock() - real_clock() % STEP)
    store = TeamStore(home)
    store.create(TEAM)
    repeats, stale = alternate(store, 200, lambda st: team_view._signature(st))
    assert stale == []
    assert repeats > 0  # what the view must not be fooled by did happen
    wait_settled(home.config_path(TEAM))
    store.read_file(TEAM)
    opens.clear()
    store.read_file(TEAM)
    assert opens == {}


def test_a_write_through_the_store_is_seen_even_where_a_stat_cannot_tell(home: Home,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Writes through ``TeamStore`` drop what they wrote from the view, whatever the file's identity says."""
    store = running(home, ["bob"])
    monkeypatch.setattr(team_view, "_signature", lambda st: team_view.Signature(1, 1, 1, 1))
    assert store.get(TEAM).member("bob").prompt == "p" * 10  # type: ignore[union-attr]
    assert store.get(TEAM).member("bob").prompt == "p" * 10  # type: ignore[union-attr]  # kept
    store.update_member(TEAM, "bob", prompt="q" * 10)
    assert store.get(TEAM).member("bob").prompt == "q" * 10  # type: ignore[union-attr]
    store.set_activity(TEAM, "bob", Activity(status="busy", last_activity=now_ms(), tokens=2))
    assert store.get(TEAM).member("bob").status == "busy"  # type: ignore[union-attr]


@pytest.mark.parametrize("size", [2, 6])
def test_a_read_opens_only_the_activity_records_that_changed(home: Home, opens: Opens, size: int) -> None:
    """One teammate's new record costs one open, however many teammates there are."""
    store = running(home, [f"m{i}" for i in range(size)])
    store.get(TEAM)
    opens.clear()
    record = Activity(status="busy", last_activity=now_ms(), tokens=5)
    TeamStore(Home(home.root)).set_activity(TEAM, "m1", record)  # as the teammate does: another process's home
    assert store.get(TEAM).member("m1").status == "busy"  # type: ignore[union-attr]
    assert opens == {"m1.json": 1}
