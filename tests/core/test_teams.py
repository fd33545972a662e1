from __future__ import annotations

import json
import os
import time

import pytest

from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member, TeamFile
from swarm.core.team_view import stable
from swarm.core.teams import TeamStore
from swarm.errors import ConflictError, NotFoundError


def test_create_writes_team_file_with_lead(home: Home) -> None:
    TeamStore(home).create("alpha", "does things")
    doc = json.loads(home.config_path("alpha").read_text())
    assert doc["name"] == "alpha"
    assert doc["leadAgentId"] == "team-lead@alpha"
    assert [m["name"] for m in doc["members"]] == ["team-lead"]
    assert doc["members"][0]["agentId"] == "team-lead@alpha"
    assert isinstance(doc["createdAt"], int) and doc["createdAt"] > 1_700_000_000_000


def test_create_twice_conflicts(home: Home) -> None:
    store = TeamStore(home)
    store.create("alpha")
    with pytest.raises(ConflictError, match="already exists"):
        store.create("alpha")


def test_list_and_get(home: Home) -> None:
    store = TeamStore(home)
    assert store.list() == []
    store.create("b")
    store.create("a")
    assert [t.name for t in store.list()] == ["a", "b"]
    with pytest.raises(NotFoundError, match="swarm team list"):
        store.get("nope")


def test_member_add_update_remove(home: Home) -> None:
    store = TeamStore(home)
    store.create("t")
    added = store.add_member("t", Member(agent_id="bob@t", name="bob"))
    assert added.color == "blue"
    second = store.add_member("t", Member(agent_id="amy@t", name="amy"))
    assert second.color not in (None, "blue")
    store.update_member("t", "bob", is_active=True, pid=42)
    bob = store.get("t").member("bob")
    assert bob is not None and bob.is_active and bob.pid == 42
    with pytest.raises(ConflictError):
        store.add_member("t", Member(agent_id="bob@t", name="bob"))
    store.remove_member("t", "bob")
    assert store.get("t").member("bob") is None
    with pytest.raises(NotFoundError, match="members: team-lead, amy"):
        store.update_member("t", "bob", pid=1)


def test_inactive_member_can_be_replaced(home: Home) -> None:
    store = TeamStore(home)
    store.create("t")
    store.add_member("t", Member(agent_id="bob@t", name="bob", is_active=False, prompt="old"))
    store.add_member("t", Member(agent_id="bob@t", name="bob", prompt="new"))
    members = [m for m in store.get("t").members if m.name == "bob"]
    assert len(members) == 1 and members[0].prompt == "new"


def test_unknown_fields_survive_rewrite(home: Home) -> None:
    store = TeamStore(home)
    store.create("t")
    path = home.config_path("t")
    doc = json.loads(path.read_text())
    doc["futureField"] = {"x": 1}
    doc["members"][0]["claudeOnly"] = "keep me"
    path.write_text(json.dumps(doc))
    store.add_member("t", Member(agent_id="bob@t", name="bob"))
    after = json.loads(path.read_text())
    assert after["futureField"] == {"x": 1}
    assert after["members"][0]["claudeOnly"] == "keep me"


def test_delete_refused_while_active_unless_forced(home: Home) -> None:
    store = TeamStore(home)
    store.create("t")
    store.add_member("t", Member(agent_id="bob@t", name="bob", is_active=True))
    Mailbox(home, "t").send("bob", "hi", sender="team-lead")
    tasks = home.tasks_dir("t")
    tasks.mkdir(parents=True)
    (tasks / "1.json").write_text("{}")
    with pytest.raises(ConflictError, match="bob"):
        store.delete("t")
    assert home.inbox_path("t", "bob").exists()
    store.delete("t", force=True)
    assert not home.team_dir("t").exists()
    assert not tasks.exists()
    assert list(home.teams_dir.iterdir()) == []


def test_roster_reads_again_only_when_the_file_is_another(home: Home) -> None:
    store = TeamStore(home)
    store.create("alpha")
    while not stable(home.config_path("alpha")):  # until then it is read on every call (swarm.core.team_view)
        time.sleep(0.001)
    roster = store.roster("alpha")
    first = roster.current()
    assert roster.current() is first  # unchanged on disk: not read again
    store.add_member("alpha", Member(agent_id="bob@alpha", name="bob"))  # a swarm write replaces the file
    assert [m.name for m in roster.current().members] == ["team-lead", "bob"]


def test_roster_sees_an_in_place_rewrite_of_the_same_size(home: Home) -> None:
    """Another program rewriting config.json in place, same size, mtime put back (a hostile
    teammate's Bash could do that much): the ctime still moves, so the new rules are read."""
    store = TeamStore(home)
    store.create("alpha")
    path = home.config_path("alpha")
    doc = json.loads(path.read_text())
    doc["permissions"] = {"allow": [], "deny": ["Bash(rm:*)"], "ask": []}
    path.write_text(json.dumps(doc, indent=2))
    roster = store.roster("alpha")
    assert _denied(roster.current()) == ["Bash(rm:*)"]
    before = path.stat()
    with open(path, "r+b") as f:  # same inode, same size
        text = f.read().replace(b"Bash(rm:*)", b"Bash(cp:*)")
        f.seek(0)
        f.write(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (before.st_ino, before.st_size, before.st_mtime_ns)
    assert _denied(roster.current()) == ["Bash(cp:*)"]


def _denied(team: TeamFile) -> list[str]:
    assert team.permissions is not None
    return team.permissions.deny


def test_roster_of_a_missing_team_says_how_to_find_one(home: Home) -> None:
    with pytest.raises(NotFoundError, match="swarm team list"):
        TeamStore(home).roster("nope").current()


def _running(home: Home) -> TeamStore:
    store = TeamStore(home)
    store.create("t")
    store.add_member("t", Member(agent_id="w@t", name="w", is_active=True, status="idle", last_activity=1))
    return store


def test_a_teammates_activity_is_laid_over_its_member_entry(home: Home) -> None:
    from swarm.core.protocol import Activity

    store = _running(home)
    store.set_activity("t", "w", Activity(status="busy", last_activity=2, tokens=7))
    member = store.get("t").member("w")
    assert (member.status, member.last_activity, member.tokens) == ("busy", 2, 7)
    assert json.loads(home.config_path("t").read_text())["members"][1]["status"] == "idle"  # the file is not rewritten


def test_an_activity_record_a_power_loss_emptied_reads_as_none_known_at_once(
        home: Home, caplog: pytest.LogCaptureFixture) -> None:
    from swarm.core.protocol import Activity

    store = _running(home)
    store.set_activity("t", "w", Activity(status="busy", last_activity=2, tokens=7))
    home.activity_path("t", "w").write_bytes(b"")  # what a new record can be after a power loss
    member = store.get("t").member("w")
    assert (member.status, member.last_activity) == ("idle", 1)  # the team file's word
    assert "unparsable" not in caplog.text  # no 0.5 s of re-reads and no warning on every `swarm status`
