"""The task store on real files: ids, dependencies, claims, deletion, corruption, and a member's end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swarm.core.frames import TeammateTerminated, entry_frame
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.members import mark_gone, mark_gone_where
from swarm.core.names import LEAD_NAME
from swarm.core.protocol import Member
from swarm.core.tasks import TaskStore
from swarm.core.teams import TeamStore
from swarm.errors import ConflictError, CorruptFileError, NotFoundError, UsageError

TEAM = "crew"


@pytest.fixture
def store(home: Home) -> TaskStore:
    return TaskStore(home, TEAM)


def on_disk(home: Home, task_id: str) -> dict[str, object]:
    return json.loads((home.tasks_dir(TEAM) / f"{task_id}.json").read_text())


def edges(store: TaskStore) -> dict[str, tuple[list[str], list[str]]]:
    return {t.id: (t.blocks, t.blocked_by) for t in store.list()}


# -- ids and the file format ------------------------------------------------


def test_ids_are_consecutive_and_never_reused_after_deletion(store: TaskStore, home: Home) -> None:
    assert [store.create(f"t{i}").id for i in range(3)] == ["1", "2", "3"]
    store.update("3", by=LEAD_NAME, status="deleted")
    assert store.create("t4").id == "4"
    assert (home.tasks_dir(TEAM) / ".highwatermark").read_text() == "4"
    assert [t.id for t in store.list()] == ["1", "2", "4"]


def test_ids_survive_a_lost_watermark(store: TaskStore, home: Home) -> None:
    for i in range(3):
        store.create(f"t{i}")
    (home.tasks_dir(TEAM) / ".highwatermark").write_text("1")  # e.g. a crash before the watermark was written
    assert store.create("next").id == "4"


def test_list_orders_by_number_not_by_text(store: TaskStore) -> None:
    for i in range(11):
        store.create(f"t{i}")
    assert [t.id for t in store.list()] == [str(i) for i in range(1, 12)]


def test_file_keeps_the_wire_shape_and_foreign_fields(store: TaskStore, home: Home) -> None:
    store.create("write the parser", "details", active_form="Writing the parser", metadata={"k": 1})
    doc = on_disk(home, "1")
    assert doc == {"id": "1", "subject": "write the parser", "description": "details",
                   "activeForm": "Writing the parser", "status": "pending", "blocks": [], "blockedBy": [],
                   "metadata": {"k": 1}}
    doc["claudeOnly"] = {"x": True}
    (home.tasks_dir(TEAM) / "1.json").write_text(json.dumps(doc))
    store.update("1", by=LEAD_NAME, owner="alice")
    changed = on_disk(home, "1")
    assert changed["claudeOnly"] == {"x": True} and changed["owner"] == "alice"
    store.update("1", by=LEAD_NAME, owner=None)
    assert "owner" not in on_disk(home, "1")  # cleared is absent, not null


def test_bad_input_is_refused_with_nothing_written(store: TaskStore, home: Home) -> None:
    store.create("one")
    with pytest.raises(UsageError, match="subject"):
        store.create("   ")
    with pytest.raises(UsageError, match="status 'done' is not one of"):
        store.update("1", by=LEAD_NAME, status="done")
    with pytest.raises(UsageError, match="not a task number"):
        store.get("abc")
    with pytest.raises(NotFoundError, match="no task 9 in team 'crew'; `swarm tasks --team crew`"):
        store.update("1", by=LEAD_NAME, subject="changed", add_blocked_by=["9"])
    assert store.get("1").subject == "one"
    assert sorted(p.name for p in home.tasks_dir(TEAM).glob("*.json")) == ["1.json"]


def test_metadata_merges_and_null_removes_a_key(store: TaskStore) -> None:
    store.create("one", metadata={"a": 1, "b": 2})
    change = store.update("#1", by=LEAD_NAME, metadata={"b": None, "c": 3})
    assert change.task is not None and change.task.metadata == {"a": 1, "c": 3}


# -- dependencies -----------------------------------------------------------


def test_edges_are_symmetric_both_ways(store: TaskStore, home: Home) -> None:
    for i in range(3):
        store.create(f"t{i}")
    store.update("1", by=LEAD_NAME, add_blocks=["2"])
    store.update("3", by=LEAD_NAME, add_blocked_by=["2", "1"])
    assert edges(store) == {"1": (["2", "3"], []), "2": (["3"], ["1"]), "3": ([], ["1", "2"])}
    assert on_disk(home, "2")["blockedBy"] == ["1"] and on_disk(home, "1")["blocks"] == ["2", "3"]


def test_a_half_written_edge_reads_whole_and_is_repaired(store: TaskStore, home: Home) -> None:
    store.create("a")
    store.create("b")
    path = home.tasks_dir(TEAM) / "2.json"
    doc = json.loads(path.read_text())
    doc["blockedBy"] = ["1"]  # as if the writer died before writing task 1's side
    path.write_text(json.dumps(doc))
    assert edges(store) == {"1": (["2"], []), "2": ([], ["1"])}
    store.create("c")  # any change writes the repair
    assert on_disk(home, "1")["blocks"] == ["2"]


def test_a_cycle_is_refused_and_named(store: TaskStore) -> None:
    for i in range(3):
        store.create(f"t{i}")
    store.update("2", by=LEAD_NAME, add_blocked_by=["1"])
    store.update("3", by=LEAD_NAME, add_blocked_by=["2"])
    with pytest.raises(ConflictError, match=r"makes the cycle 3 -> 1 -> 2 -> 3"):
        store.update("1", by=LEAD_NAME, add_blocked_by=["3"])
    with pytest.raises(ConflictError, match="cycle 1 -> 1"):
        store.update("1", by=LEAD_NAME, add_blocks=["1"])
    assert store.get("1").blocked_by == [] and store.get("3").blocks == []


def test_completing_a_blocker_unblocks_its_dependents(store: TaskStore) -> None:
    store.create("schema")
    store.create("api", blocked_by=["1"])
    store.create("ui", blocked_by=["1", "2"])
    assert [t.id for t in store.claimable()] == ["1"]
    with pytest.raises(ConflictError, match=r"^task 2 is blocked by 1 \(not completed\)$"):
        store.claim("2", "bob")
    store.claim("1", "alice")
    store.update("1", by="alice", status="completed")
    assert [t.id for t in store.claimable()] == ["2"]
    with pytest.raises(ConflictError, match=r"^task 3 is blocked by 2 \(not completed\)$"):
        store.claim("3", "bob")
    assert store.claim("2", "bob").owner == "bob"


def test_delete_removes_the_task_and_every_reference(store: TaskStore, home: Home) -> None:
    store.create("a")
    store.create("b", blocked_by=["1"])
    store.create("c", blocked_by=["2"])
    change = store.update("2", by=LEAD_NAME, status="deleted")
    assert change.task is None
    assert not (home.tasks_dir(TEAM) / "2.json").exists()
    assert edges(store) == {"1": ([], []), "3": ([], [])}
    assert [t.id for t in store.claimable()] == ["1", "3"]
    with pytest.raises(NotFoundError, match="no task 2"):
        store.get("2")


# -- claims and owners ------------------------------------------------------


def test_claim_refuses_someone_elses_task_and_a_completed_one(store: TaskStore) -> None:
    store.create("a")
    claimed = store.claim("1", "alice")
    assert (claimed.owner, claimed.status) == ("alice", "in_progress")
    with pytest.raises(ConflictError, match="^task 1 is already claimed by alice$"):
        store.claim("1", "bob")
    assert store.claim("1", "alice").owner == "alice"  # again by the holder: no change, no error
    store.update("1", by="alice", status="completed")
    with pytest.raises(ConflictError, match="already completed"):
        store.claim("1", "alice")
    with pytest.raises(ConflictError, match="^task 1 is already completed$"):
        store.update("1", by="alice", status="completed")


def test_a_task_assigned_to_me_can_be_claimed_by_me_only(store: TaskStore) -> None:
    store.create("a", owner="alice")
    assert [t.id for t in store.claimable()] == []
    with pytest.raises(ConflictError, match="claimed by alice"):
        store.claim("1", "bob")
    assert store.claim("1", "alice").status == "in_progress"


def test_taking_a_task_with_update_is_checked_like_a_claim_and_refused_whole(store: TaskStore, home: Home) -> None:
    store.create("a")
    store.create("b", blocked_by=["1"])
    store.create("c")
    store.claim("3", "alice")
    with pytest.raises(ConflictError, match="^task 3 is already claimed by alice$"):
        store.update("3", by="bob", owner="bob")
    with pytest.raises(ConflictError, match="^task 2 is blocked by 1 \\(not completed\\)$"):
        store.update("2", by="bob", owner="bob", status="completed")
    before = sorted((p.name, p.read_bytes()) for p in home.tasks_dir(TEAM).glob("*.json"))
    with pytest.raises(ConflictError, match="cycle"):  # the claim's checks pass, the cycle is refused: nothing lands
        store.update("1", by=LEAD_NAME, owner=LEAD_NAME, add_blocked_by=["2"], subject="renamed")
    assert sorted((p.name, p.read_bytes()) for p in home.tasks_dir(TEAM).glob("*.json")) == before
    assert store.update("3", by="alice", owner="alice", status="completed").task is not None  # one's own task


def test_update_reports_an_assignment_only_to_someone_else(store: TaskStore) -> None:
    store.create("a")
    assert store.update("1", by="alice", owner="alice").assigned_to is None
    assert store.update("1", by=LEAD_NAME, owner="bob").assigned_to == "bob"
    assert store.update("1", by=LEAD_NAME, owner="bob").assigned_to is None  # unchanged
    assert store.update("1", by=LEAD_NAME, owner=None).assigned_to is None
    assert store.get("1").owner is None


# -- corruption -------------------------------------------------------------


def test_a_corrupt_task_file_is_left_by_readers_quarantined_by_a_change(store: TaskStore, home: Home) -> None:
    store.create("a")
    store.create("b", blocked_by=["1"])
    broken = home.tasks_dir(TEAM) / "1.json"
    broken.write_text('{"id": "1", "subj')
    assert [t.id for t in store.list()] == ["2"]
    with pytest.raises(CorruptFileError) as caught:
        store.get("1")
    message = str(caught.value)
    assert "\n" not in message and "task 1 of team 'crew' did not parse and was left in place" in message
    assert store.problems() == [message]
    assert broken.read_text() == '{"id": "1", "subj' and not list(home.tasks_dir(TEAM).glob("1.json.corrupt-*"))

    with pytest.raises(CorruptFileError):
        store.claim("1", "alice")  # a change: the file is moved aside under the lock
    moved = list(home.tasks_dir(TEAM).glob("1.json.corrupt-*"))
    assert len(moved) == 1 and moved[0].read_text() == '{"id": "1", "subj'
    with pytest.raises(CorruptFileError) as caught:
        store.get("1")
    assert "\n" not in str(caught.value) and str(moved[0]) in str(caught.value)
    assert store.problems() == [str(caught.value)]
    assert store.get("2").blocked_by == []  # the edge to the broken task is gone with it
    assert store.create("c").id == "3"  # the quarantined id is not handed out again


def test_a_task_file_that_is_not_a_task_is_reported(store: TaskStore, home: Home) -> None:
    store.create("a")
    (home.tasks_dir(TEAM) / "1.json").write_text(json.dumps({"id": "7", "subject": "wrong id"}))
    with pytest.raises(CorruptFileError, match="task 1 .* did not parse"):
        store.get("1")


# -- a member's end releases its tasks --------------------------------------


@pytest.fixture
def team(home: Home) -> Home:
    teams = TeamStore(home)
    teams.create(TEAM, cwd=str(home.root))
    for name in ("alice", "bob"):
        teams.add_member(TEAM, Member(agent_id=f"{name}@{TEAM}", name=name, is_active=True))
    return home


def lead_notices(home: Home) -> list[str]:
    frames = [entry_frame(e) for e in Mailbox(home, TEAM).read(LEAD_NAME)]
    return [f.message for f in frames if isinstance(f, TeammateTerminated)]


def test_death_unassigns_unfinished_tasks_and_tells_the_lead_which(team: Home, store: TaskStore) -> None:
    for i in range(4):
        store.create(f"t{i}")
    store.claim("1", "alice")
    store.claim("2", "alice")
    store.update("2", by="alice", status="completed")
    store.update("4", by=LEAD_NAME, owner="alice")
    store.claim("3", "bob")
    assert mark_gone(team, TEAM, "alice", "dead", notice="alice died (pid 123)")
    by_id = {t.id: (t.owner, t.status) for t in store.list()}
    assert by_id == {"1": (None, "pending"), "2": ("alice", "completed"), "3": ("bob", "in_progress"),
                     "4": (None, "pending")}
    assert lead_notices(team) == ["alice died (pid 123); its tasks 1, 4 are pending again"]
    assert not mark_gone(team, TEAM, "alice", "dead", notice="again")  # a second noticer: nothing more
    assert len(lead_notices(team)) == 1


def test_a_clean_stop_releases_tasks_with_a_notice_of_its_own(team: Home, store: TaskStore) -> None:
    store.create("a")
    store.claim("1", "bob")
    mark_gone(team, TEAM, "alice", "stopped")
    assert lead_notices(team) == []  # alice held nothing: nothing to say
    mark_gone(team, TEAM, "bob", "stopped")
    assert lead_notices(team) == ["bob stopped; its task 1 is pending again"]
    assert store.get("1").owner is None and store.get("1").status == "pending"


def test_the_batch_form_releases_each_members_tasks(team: Home, store: TaskStore) -> None:
    store.create("a")
    store.create("b")
    store.claim("1", "alice")
    store.claim("2", "bob")
    gone = mark_gone_where(team, TEAM, "dead", lambda m: True, notice=lambda m: f"{m.name} vanished")
    assert sorted(m.name for m in gone) == ["alice", "bob"]
    assert sorted(lead_notices(team)) == ["alice vanished; its task 1 is pending again",
                                          "bob vanished; its task 2 is pending again"]
    assert [t.id for t in store.claimable()] == ["1", "2"]


def test_a_member_of_a_team_without_tasks_leaves_no_task_files(team: Home) -> None:
    mark_gone(team, TEAM, "alice", "stopped")
    assert not Path(team.tasks_dir(TEAM)).exists()
