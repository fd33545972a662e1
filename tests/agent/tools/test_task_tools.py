"""The task tools as the model calls them: docs/protocol.md's input names, results, claims, assignment frames.

Inputs go through each tool's input model (``call``), as the loop does with
the model's JSON; the store, the team file and the inboxes are real files.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from swarm.agent.tools import ToolContext, ToolError
from swarm.agent.tools.tasks import (
    TaskCreate,
    TaskGet,
    TaskList,
    TaskUpdate,
    task_tools,
)
from swarm.core.frames import TaskAssignment, entry_frame
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.core.tasks import TaskStore
from swarm.core.teams import TeamStore

from tests.conftest import both_stores

from .conftest import Call

TEAM = "crew"
@pytest.fixture
def team_ctx(home: Home, ctx: ToolContext, team_store: str | None) -> ToolContext:
    """``ctx`` as alice of team ``crew`` (team-lead, alice, bob), in files or in ``team_store``'s database."""
    teams = TeamStore(home)
    teams.create(TEAM, cwd=str(home.root), store=team_store)
    for name in ("alice", "bob"):
        teams.add_member(TEAM, Member(agent_id=f"{name}@{TEAM}", name=name, is_active=True))
    ctx.with_team(TEAM, "alice", Mailbox(home, TEAM))
    return ctx


@pytest.fixture
def store(home: Home) -> TaskStore:
    return TaskStore(home, TEAM)


def as_agent(ctx: ToolContext, name: str) -> ToolContext:
    ctx.identity = replace(ctx.identity, name=name)
    return ctx


def assignments(home: Home, agent: str) -> list[TaskAssignment]:
    frames = [entry_frame(e) for e in Mailbox(home, TEAM).read(agent)]
    return [f for f in frames if isinstance(f, TaskAssignment)]


def refused(call: Call, tool: Any, **raw: Any) -> str:
    with pytest.raises(ToolError) as caught:
        call(tool, **raw)
    return str(caught.value)


@pytest.mark.parametrize("tool", task_tools(), ids=lambda t: t.name)
def test_task_tools_run_without_a_permission_prompt(tool: Any) -> None:
    """Their field names and types are Claude Code's (``tests/teammate/test_tool_schema_parity.py``)."""
    assert tool.read_only  # the task list is not the workspace: no permission prompt


def test_an_agent_without_a_team_is_told_so(call: Call) -> None:
    assert refused(call, TaskList()).startswith("no team: ")
    assert refused(call, TaskCreate(), subject="x", description="y").startswith("no team: ")


@both_stores
def test_create_list_and_get(team_ctx: ToolContext, call: Call, store: TaskStore) -> None:
    assert call(TaskCreate(), subject="Write the parser", description="in parse.py",
                activeForm="Writing the parser", metadata={"area": "core"}) == \
        "Task #1 created successfully: Write the parser"
    call(TaskCreate(), subject="Test the parser", description="")
    call(TaskUpdate(), taskId=2, addBlockedBy=[1])
    assert store.get("2").blocked_by == ["1"] and store.get("1").blocks == ["2"]
    assert call(TaskList()) == ("#1 [pending] Write the parser\n"
                                "#2 [pending] Test the parser blocked by #1")
    assert call(TaskGet(), taskId="1") == (
        "Task #1: Write the parser\nStatus: pending\nOwner: (none)\nActive form: Writing the parser\n"
        "Description: in parse.py\nBlocks: #2\nMetadata: {\"area\": \"core\"}")


@both_stores
def test_a_claim_is_one_update_and_a_second_claimer_hears_who_holds_it(team_ctx: ToolContext, call: Call,
                                                                          store: TaskStore) -> None:
    call(TaskCreate(), subject="a", description="")
    assert call(TaskUpdate(), taskId="1", status="in_progress", owner="alice").startswith(
        "Updated task #1: a [in_progress] owner: alice")
    as_agent(team_ctx, "bob")
    assert refused(call, TaskUpdate(), taskId="1", status="in_progress", owner="bob") == \
        "task 1 is already claimed by alice"
    assert store.get("1").owner == "alice"


@both_stores
def test_a_claim_of_a_blocked_task_names_the_open_blockers(team_ctx: ToolContext, call: Call,
                                                           store: TaskStore) -> None:
    for subject in ("a", "b", "c"):
        call(TaskCreate(), subject=subject, description="")
    call(TaskUpdate(), taskId="3", addBlockedBy=["1", "2"])
    assert refused(call, TaskUpdate(), taskId="3", status="in_progress", owner="alice") == \
        "task 3 is blocked by 1, 2 (not completed)"
    assert store.get("3").owner is None
    call(TaskUpdate(), taskId="1", status="in_progress")  # owner left out on a free task: a claim too
    assert store.get("1").owner == "alice"
    done = call(TaskUpdate(), taskId="1", status="completed")
    assert done == "Updated task #1: a [completed] owner: alice; tasks you could claim next: #2 b."
    assert call(TaskList()).splitlines()[2] == "#3 [pending] c blocked by #2"


@both_stores
def test_giving_a_task_to_a_teammate_sends_them_the_assignment(team_ctx: ToolContext, call: Call,
                                                               home: Home, store: TaskStore) -> None:
    call(TaskCreate(), subject="Review the API", description="look at api.py")
    result = call(TaskUpdate(), taskId="1", owner="bob")
    assert result == "Updated task #1: Review the API [pending] owner: bob; bob was sent the assignment."
    [frame] = assignments(home, "bob")
    assert (frame.task_id, frame.subject, frame.description, frame.assigned_by) == \
        ("1", "Review the API", "look at api.py", "alice")
    [entry] = Mailbox(home, TEAM).read("bob")
    assert entry.sender == "alice" and entry.structured
    call(TaskUpdate(), taskId="1", owner="")
    call(TaskUpdate(), taskId="1", owner="alice")  # taking a free task oneself tells nobody
    assert assignments(home, "alice") == [] and len(assignments(home, "bob")) == 1


@both_stores
def test_setting_oneself_as_owner_is_checked_like_a_claim(team_ctx: ToolContext, call: Call,
                                                          store: TaskStore) -> None:
    for subject in ("a", "b", "c"):
        call(TaskCreate(), subject=subject, description="")
    call(TaskUpdate(), taskId="3", addBlockedBy=["2"])
    call(TaskUpdate(), taskId="1", status="in_progress", owner="alice")
    as_agent(team_ctx, "bob")
    assert refused(call, TaskUpdate(), taskId="1", owner="bob") == "task 1 is already claimed by alice"
    assert refused(call, TaskUpdate(), taskId="3", owner="bob") == "task 3 is blocked by 2 (not completed)"
    assert (store.get("1").owner, store.get("3").owner) == ("alice", None)
    as_agent(team_ctx, "team-lead")  # giving a task to someone else is an assignment, not a claim
    assert call(TaskUpdate(), taskId="3", owner="bob").endswith("; bob was sent the assignment.")
    assert refused(call, TaskUpdate(), taskId="1", owner="team-lead") == "task 1 is already claimed by alice"


def test_a_refused_update_changes_nothing(team_ctx: ToolContext, call: Call, store: TaskStore, home: Home) -> None:
    call(TaskCreate(), subject="a", description="")
    call(TaskCreate(), subject="b", description="")
    call(TaskUpdate(), taskId="2", addBlockedBy=["1"])
    before = sorted((p.name, p.read_bytes()) for p in home.tasks_dir(TEAM).glob("*.json"))
    message = refused(call, TaskUpdate(), taskId="1", status="in_progress", owner="alice", addBlockedBy=["2"],
                      subject="renamed")
    assert "makes the cycle 2 -> 1 -> 2" in message
    assert sorted((p.name, p.read_bytes()) for p in home.tasks_dir(TEAM).glob("*.json")) == before
    assert (store.get("1").owner, store.get("1").status, store.get("1").subject) == (None, "pending", "a")


def test_an_owner_who_is_not_a_member_is_refused_with_nothing_changed(team_ctx: ToolContext, call: Call,
                                                                     store: TaskStore) -> None:
    call(TaskCreate(), subject="a", description="")
    message = refused(call, TaskUpdate(), taskId="1", owner="mallory", subject="changed")
    assert message.startswith("no member 'mallory' in team 'crew' to give the task to; members: team-lead, alice, bob")
    assert (store.get("1").owner, store.get("1").subject) == (None, "a")


@both_stores
def test_an_empty_owner_clears_it_and_deleted_deletes(team_ctx: ToolContext, call: Call, store: TaskStore) -> None:
    call(TaskCreate(), subject="a", description="")
    call(TaskCreate(), subject="b", description="")
    call(TaskUpdate(), taskId="1", owner="bob", addBlocks=["2"])
    call(TaskUpdate(), taskId="1", owner="")
    assert store.get("1").owner is None
    assert call(TaskUpdate(), taskId="#1", status="deleted") == "Task #1 deleted."
    assert [t.id for t in store.list()] == ["2"] and store.get("2").blocked_by == []
    assert refused(call, TaskGet(), taskId="1").startswith("no task 1 in team 'crew'")


@both_stores
def test_a_cycle_and_a_bad_id_come_back_as_tool_errors(team_ctx: ToolContext, call: Call) -> None:
    call(TaskCreate(), subject="a", description="")
    call(TaskCreate(), subject="b", description="")
    call(TaskUpdate(), taskId="1", addBlocks=["2"])
    assert "makes the cycle 2 -> 1 -> 2" in refused(call, TaskUpdate(), taskId="2", addBlocks=["1"])
    assert "not a task number" in refused(call, TaskGet(), taskId="one")


def test_a_corrupt_task_file_is_one_warning_line_in_the_list(team_ctx: ToolContext, call: Call, home: Home) -> None:
    call(TaskCreate(), subject="a", description="")
    call(TaskCreate(), subject="b", description="")
    Path(home.tasks_dir(TEAM) / "2.json").write_text("{not json")
    lines = call(TaskList()).splitlines()
    assert lines[0] == "#1 [pending] a"
    assert len(lines) == 2 and lines[1].startswith("warning: task 2 of team 'crew' did not parse and was left in place ")


@both_stores
def test_a_completion_is_recorded_when_taskupdate_sets_it_and_only_while_it_holds(
        team_ctx: ToolContext, store: TaskStore, call: Call) -> None:
    """``ctx.turn.completed_tasks`` is what a teammate's idle notification reports: the tasks it completed and holds."""
    for subject in ("one", "two", "three", "four", "five"):
        store.create(subject)
    store.create("bob's", owner="bob")
    for task in ("1", "2", "3", "4", "5"):
        call(TaskUpdate(), taskId=task, status="in_progress")
    assert team_ctx.turn.completed_tasks == []  # a claim completes nothing
    for task in ("2", "1", "3", "4", "5"):
        call(TaskUpdate(), taskId=task, status="completed")
    assert team_ctx.turn.completed_tasks == ["2", "1", "3", "4", "5"]
    call(TaskUpdate(), taskId="1", metadata={"note": "x"})  # an edit of a completed task is no new completion
    call(TaskUpdate(), taskId="3", status="in_progress")  # reopened
    call(TaskUpdate(), taskId="4", owner="bob")  # given away
    call(TaskUpdate(), taskId="5", status="deleted")
    assert team_ctx.turn.completed_tasks == ["2", "1"]
    call(TaskUpdate(), taskId="6", status="completed")  # bob's task, completed by alice: not hers to report
    with pytest.raises(ToolError, match="already completed"):
        call(TaskUpdate(), taskId="2", status="completed")
    assert team_ctx.turn.completed_tasks == ["2", "1"]
