"""``swarm tasks`` and ``swarm task add|update`` through the installed executable."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable

import pytest

from swarm.core.frames import TaskAssignment, entry_frame
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.core.tasks import TaskStore
from swarm.core.teams import TeamStore

Run = Callable[..., subprocess.CompletedProcess[str]]
TEAM = "crew"


@pytest.fixture
def team(home: Home) -> Home:
    teams = TeamStore(home)
    teams.create(TEAM, cwd=str(home.root))
    teams.add_member(TEAM, Member(agent_id=f"bob@{TEAM}", name="bob", is_active=True))
    return home


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stderr
    return result.stdout


def one_line_error(result: subprocess.CompletedProcess[str], code: int) -> str:
    assert result.returncode == code, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("swarm: error: "), result.stderr
    return lines[0]


def test_add_list_and_update(team: Home, run_exe: Run) -> None:
    assert ok(run_exe("task", "add", "Write the parser", "-t", TEAM, "-d", "in parse.py")) == \
        "created task 1: Write the parser\n"
    ok(run_exe("task", "add", "Test the parser", "-t", TEAM, "--blocked-by", "1"))
    ok(run_exe("task", "add", "Ship", "-t", TEAM, "--blocked-by", "1, 2"))
    assert ok(run_exe("tasks", "-t", TEAM)).splitlines() == [
        "ID  SUBJECT           STATUS   OWNER  BLOCKED BY",
        "1   Write the parser  pending",
        "2   Test the parser   pending         1",
        "3   Ship              pending         1, 2",
    ]
    assert ok(run_exe("task", "update", "1", "-t", TEAM, "--status", "completed")) == \
        "updated task 1: Write the parser [completed]\n"
    rows = ok(run_exe("tasks", "-t", TEAM)).splitlines()
    assert rows[2].split() == ["2", "Test", "the", "parser", "pending"] and rows[3].endswith("  2")
    docs = json.loads(ok(run_exe("tasks", "-t", TEAM, "--json")))
    assert [(d["id"], d["status"], d["blockedBy"], d["blocks"]) for d in docs] == [
        ("1", "completed", [], ["2", "3"]), ("2", "pending", ["1"], ["3"]), ("3", "pending", ["1", "2"], [])]
    assert ok(run_exe("task", "update", "3", "-t", TEAM, "--status", "deleted")) == "deleted task 3\n"
    assert [t.id for t in TaskStore(team, TEAM).list()] == ["1", "2"]


def test_the_team_comes_from_swarm_team(team: Home, run_exe: Run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWARM_TEAM", TEAM)
    ok(run_exe("task", "add", "a"))
    assert json.loads(ok(run_exe("tasks", "--json")))[0]["subject"] == "a"


def test_an_owner_is_sent_the_assignment_and_can_be_cleared(team: Home, run_exe: Run) -> None:
    assert ok(run_exe("task", "add", "Review", "-t", TEAM, "--owner", "bob")) == \
        "created task 1: Review (bob was sent the assignment)\n"
    ok(run_exe("task", "add", "Other", "-t", TEAM))
    doc = json.loads(ok(run_exe("task", "update", "2", "-t", TEAM, "--owner", "bob", "--json")))
    assert (doc["owner"], doc["assignmentSentTo"]) == ("bob", "bob")
    frames = [entry_frame(e) for e in Mailbox(team, TEAM).read("bob")]
    assert [(f.task_id, f.assigned_by) for f in frames if isinstance(f, TaskAssignment)] == \
        [("1", "team-lead"), ("2", "team-lead")]
    ok(run_exe("task", "update", "2", "-t", TEAM, "--no-owner"))
    assert TaskStore(team, TEAM).get("2").owner is None


def test_errors_are_one_line_and_change_nothing(team: Home, run_exe: Run) -> None:
    ok(run_exe("task", "add", "a", "-t", TEAM))
    ok(run_exe("task", "add", "b", "-t", TEAM, "--blocked-by", "1"))
    before = _task_files(team)

    line = one_line_error(run_exe("task", "update", "1", "-t", TEAM, "--add-blocked-by", "2"), 1)
    assert "makes the cycle 2 -> 1 -> 2" in line
    assert "no member 'carol'" in one_line_error(run_exe("task", "add", "c", "-t", TEAM, "--owner", "carol"), 1)
    assert "no task 9 in team 'crew'" in one_line_error(run_exe("task", "update", "9", "-t", TEAM, "--status",
                                                                "completed"), 1)
    assert "'x' is not a task number" in one_line_error(run_exe("task", "add", "c", "-t", TEAM,
                                                                "--blocked-by", "1,x"), 2)
    assert "'done' is not one of" in one_line_error(run_exe("task", "update", "1", "-t", TEAM, "--status",
                                                            "done"), 2)
    assert "not both" in one_line_error(run_exe("task", "update", "1", "-t", TEAM, "--owner", "bob",
                                                "--no-owner"), 2)
    assert "nothing to change" in one_line_error(run_exe("task", "update", "1", "-t", TEAM), 2)
    assert "team 'nope' not found" in one_line_error(run_exe("tasks", "-t", "nope"), 1)
    assert _task_files(team) == before


def _task_files(team: Home) -> list[tuple[str, bytes]]:
    """The task list's files and their bytes, without the locks' own bookkeeping (it records each take)."""
    return sorted((p.name, p.read_bytes()) for p in team.tasks_dir(TEAM).iterdir()
                  if p.is_file() and ".lock" not in p.name)


def test_a_corrupt_task_file_is_one_warning_and_the_rest_is_listed(team: Home, run_exe: Run) -> None:
    ok(run_exe("task", "add", "a", "-t", TEAM))
    ok(run_exe("task", "add", "b", "-t", TEAM))
    (team.tasks_dir(TEAM) / "1.json").write_text("{broken")
    result = run_exe("tasks", "-t", TEAM)
    assert result.returncode == 0
    assert [line.split()[0] for line in result.stdout.splitlines()[1:]] == ["2"]
    [warning] = result.stderr.splitlines()  # the store's line only, not the file layer's log lines too
    assert warning.startswith("swarm: warning: task 1 of team 'crew' did not parse and was left in place ")
    assert (team.tasks_dir(TEAM) / "1.json").read_text() == "{broken", "a read-only command never moves a file aside"
    update = run_exe("task", "update", "1", "-t", TEAM, "--status", "completed")  # a change moves it aside
    assert update.returncode == 1
    logged, line = update.stderr.splitlines()
    assert logged == "swarm: ERROR: swarm.core.jsonfile: quarantined corrupt file"
    assert line.startswith("swarm: error: task 1 of team 'crew' did not parse and was moved to ")
    assert "move it back to 1.json" in line


def test_a_directory_where_a_task_file_belongs_is_one_line(team: Home, run_exe: Run) -> None:
    ok(run_exe("task", "add", "a", "-t", TEAM))
    planted = team.tasks_dir(TEAM) / "2.json"
    planted.mkdir()
    line = one_line_error(run_exe("tasks", "-t", TEAM), 1)
    assert str(planted) in line and "move it aside" in line


def test_who_changed_a_task_is_in_its_history_and_in_tasks_json(team: Home, run_exe: Run) -> None:
    """Members may change each other's tasks (as in Claude Code): each change says who made it, and when."""
    TeamStore(team).add_member(TEAM, Member(agent_id=f"alice@{TEAM}", name="alice", is_active=True))
    ok(run_exe("task", "add", "Write the parser", "-t", TEAM, "--owner", "bob"))
    TaskStore(team, TEAM).claim("1", "bob")
    TaskStore(team, TEAM).update("1", by="alice", owner=None, status="pending")  # alice clears bob's task
    ok(run_exe("task", "update", "1", "-t", TEAM, "--status", "completed"))

    [doc] = json.loads(ok(run_exe("tasks", "-t", TEAM, "--json")))
    changes = [(h["by"], h["field"], h.get("from"), h.get("to")) for h in doc["history"]]
    assert changes == [("bob", "status", "pending", "in_progress"),
                       ("alice", "status", "in_progress", "pending"), ("alice", "owner", "bob", None),
                       ("team-lead", "status", "pending", "completed")]
    assert all(h["at"] for h in doc["history"])
    assert [h.get("author") for h in doc["history"]] == [None, None, None, "person"]  # the CLI's is a person's
    assert doc["status"] == "completed" and "owner" not in doc
