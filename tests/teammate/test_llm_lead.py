"""`swarm run` as a team lead: the lead model and its teammates over the real SDK against the fake API.

The lead's requests are told apart from the teammates' by the TeamCreate tool
(only a lead has it); each teammate's by the prompt it was started with.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from swarm.agent.definitions import load_agents
from swarm.agent.headless import MainOptions, MainSession
from swarm.agent.limits import Limits
from swarm.agent.skills import load_skills
from swarm.agent.tool_api.context import AgentIdentity
from swarm.agent.tools import ToolContext, ToolError
from swarm.agent.tools.team_tools import TeamCreate, TeamDelete, team_tools
from swarm.agent.transcript import Transcript
from swarm.backends.procs import kill_tree
from swarm.core.home import Home
from swarm.core.protocol import LeadPolicy, Member
from swarm.core.teams import TeamStore
from swarm.models.anthropic_provider import AnthropicProvider
from swarm.models.retry_policy import RetryPolicy
from swarm.runtime.lead import LeadOutcome, LeadTeam, run_lead
from tests.fakes import (
    FakeAnthropicServer,
    message_json,
    text_reply,
    tool_use_reply,
    usage_json,
)
from tests.fakes.anthropic_server import ScriptedReply, since_model
from tests.teammate.conftest import teammate_pids

pytestmark = pytest.mark.usefixtures("served")  # teammates forked from the home's CLI server (tests.zygote)

LEAD = "Create a team that you lead"


@pytest.fixture(autouse=True)
def _reap(home: Home) -> Iterator[None]:
    """A run that failed may leave teammates behind; none outlives its test."""
    yield
    for pid in teammate_pids(home):
        with contextlib.suppress(OSError):  # gone meanwhile: nothing to stop
            kill_tree(pid, 1.0)


def _calls(*calls: tuple[str, dict[str, Any]]) -> ScriptedReply:
    """One assistant message with several tool calls."""
    blocks = [{"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": args}
              for i, (name, args) in enumerate(calls)]
    return ScriptedReply(200, message_json(blocks, stop_reason="tool_use"))


def _run_lead(home: Home, api: FakeAnthropicServer, cwd: Path, prompt: str, *, timeout: float = 60,
              policy: LeadPolicy | None = None) -> LeadOutcome:
    env = {**os.environ, "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": api.base_url,
           "SWARM_HOME": str(home.root)}

    def provider(model: str) -> AnthropicProvider:
        return AnthropicProvider(model=model, env=env, retry=RetryPolicy(max_retries=0), timeout=20)

    main = MainOptions(catalog=load_agents(cwd, env=env), env=env, make_provider=provider,
                     agents_dir=home.root / "runs", skills=load_skills(cwd, env=env))
    lead = LeadTeam(home, env, cwd, backend="subprocess", policy=policy)
    parent = provider("claude-lead")
    session = MainSession(parent, cwd=cwd, limits=Limits(max_turns=20), main=main, extra_tools=team_tools(lead),
                          team_control=lead)
    try:
        return run_lead(session, lead, prompt, timeout=timeout, shutdown_timeout=10)
    finally:
        session.close()
        parent.close()


def _tools(request: Any) -> set[str]:
    return {t["name"] for t in request.body["tools"]}


def _lead_script(*steps: tuple[str, Callable[[str], ScriptedReply]]) -> ScriptedReply:
    """The lead model after its first turn: the first step whose text is in what it is asked to answer now
    (each step once), else a plain 'lead waits'."""
    done: set[str] = set()

    def reply(body: Any) -> Any:
        now = json.dumps(since_model(body))
        for text, make in steps:
            if text in now and text not in done:
                done.add(text)
                return make(now).body
        return message_json([{"type": "text", "text": "lead waits"}])

    return ScriptedReply(200, reply)


def _present(home: Home, team: str, name: str) -> bool:
    member = TeamStore(home).get(team).member(name) if TeamStore(home).exists(team) else None
    return member is not None and member.present()


def test_a_lead_model_creates_a_team_spawns_teammates_reads_their_reports_and_shuts_them_down(
        home: Home, api: FakeAnthropicServer, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    api.enqueue(tool_use_reply("TeamCreate", {"team_name": "squad", "description": "two helpers"}),
                _calls(("TaskCreate", {"subject": "write the parser", "description": "A"}),
                       ("TaskCreate", {"subject": "write the docs", "description": "B"}),
                       ("TaskCreate", {"subject": "test the parser", "description": "C"})),
                tool_use_reply("TaskUpdate", {"taskId": "3", "addBlockedBy": ["1"]}),
                _calls(("Agent", {"description": "a", "prompt": "ALICE JOB", "team_name": "squad", "name": "alice"}),
                       ("Agent", {"description": "b", "prompt": "BOB JOB", "team_name": "squad", "name": "bob"})),
                text_reply("the team is working"),
                when=LEAD)
    api.enqueue(_calls(("SendMessage", {"to": "alice", "message": {"type": "shutdown_request", "reason": "done"}}),
                       ("SendMessage", {"to": "bob", "message": {"type": "shutdown_request", "reason": "done"}})),
                text_reply("asked both to stop"), when="(completed task 3: resolved)")
    # Stop only after alice's turn ended: a shutdown request she takes mid-turn replaces her idle
    # notification (and its completed task) with the approval, as it should.
    api.enqueue(text_reply("waiting for the other report"), when=LEAD, repeat=True)
    work_of = {"alice": ["1", "3"], "bob": ["2"]}
    cached = usage_json(100, 5, cache_read=70, cache_creation=30)  # every teammate reply reads and writes the cache
    for name, ids in work_of.items():
        steps = [reply for task in ids for reply in (
            tool_use_reply("TaskUpdate", {"taskId": task, "owner": name, "status": "in_progress"}, usage=cached),
            tool_use_reply("TaskUpdate", {"taskId": task, "status": "completed"}, usage=cached))]
        api.enqueue(*steps, tool_use_reply("SendMessage", {"to": "team-lead", "message": f"{name} finished"},
                                           usage=cached),
                    text_reply(f"{name} done", usage=cached), when=f"{name.upper()} JOB")
        api.enqueue(text_reply("ok", usage=cached), when=f"{name.upper()} JOB", repeat=True)

    outcome = _run_lead(home, api, work, "build it with two helpers")

    assert outcome.reason == "done" and outcome.team == "squad" and outcome.report is not None
    members = {m["name"]: m for m in outcome.report.members}
    assert set(members) == {"alice", "bob"} and all(m["stopped"] for m in members.values())
    for name, member in members.items():  # cache use: each reply's in the transcript, the sums in the report
        replies = [r["usage"] for r in Transcript(home.transcript_path("squad", name)).records()
                   if r.get("kind") == "message" and r["message"]["role"] == "assistant"]
        assert len(replies) >= 2 * len(work_of[name]) + 2
        assert all((u["cache_read_input_tokens"], u["cache_creation_input_tokens"]) == (70, 30) for u in replies)
        assert (member["cache_read_tokens"], member["cache_creation_tokens"]) == (70 * len(replies), 30 * len(replies))
        assert member["tokens"] == 205 * len(replies)
    assert outcome.report.usage == {key: sum(m[key] for m in members.values())
                                    for key in ("tokens", "cache_read_tokens", "cache_creation_tokens")}
    assert not any(m.is_active for m in TeamStore(home).get("squad").members if m.name != "team-lead")
    assert teammate_pids(home) == []
    leads = [r for r in api.requests if LEAD in json.dumps(r.body)]
    mates = [r for r in api.requests if LEAD not in json.dumps(r.body)]
    assert {"TeamCreate", "TeamDelete", "Agent", "SendMessage", "TaskCreate", "TaskUpdate"} <= _tools(leads[0])
    assert mates and all({"SendMessage", "TaskUpdate", "TaskList"} <= _tools(r) and "TeamCreate" not in _tools(r)
                         for r in mates)
    assert all("claim the next available one" in json.dumps(r.body["system"]) for r in mates)  # told to claim
    tasks = {t["id"]: (t["status"], t.get("owner")) for t in outcome.report.tasks}
    assert tasks == {"1": ("completed", "alice"), "2": ("completed", "bob"), "3": ("completed", "alice")}
    refusals = [b for r in mates for m in r.body["messages"] for b in m["content"]
                if b.get("type") == "tool_result" and b.get("is_error")]
    assert refusals == []  # every claim went through: 3 was claimed only after 1 completed
    reports = json.dumps([r.body["messages"] for r in leads])
    assert "alice finished" in reports and "bob finished" in reports
    assert "(completed task 3: resolved)" in reports  # both of alice's tasks ended in one turn: the highest id


def test_a_run_that_does_not_finish_in_time_stops_its_teammates(home: Home, api: FakeAnthropicServer,
                                                               tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    api.enqueue(tool_use_reply("TeamCreate", {"team_name": "slow"}),
                tool_use_reply("Agent", {"description": "a", "prompt": "SLOW JOB", "team_name": "slow",
                                         "name": "sleepy"}),
                text_reply("waiting"), when=LEAD)
    api.enqueue(text_reply("still waiting"), when=LEAD, repeat=True)
    api.enqueue(tool_use_reply("Bash", {"command": "sleep 30"}), when="SLOW JOB")
    api.enqueue(text_reply("ok"), when="SLOW JOB", repeat=True)

    outcome = _run_lead(home, api, work, "start a slow one", timeout=4,
                        policy=LeadPolicy(allow=["Bash(sleep:*)"]))

    assert outcome.reason == "timeout"
    assert teammate_pids(home) == []
    assert not any(m.is_active for m in TeamStore(home).get("slow").members if m.name != "team-lead")


def test_a_lead_leads_one_team_at_a_time_and_deletes_it_only_once_its_teammates_are_gone(
        home: Home, tmp_path: Path) -> None:
    lead = LeadTeam(home, dict(os.environ), tmp_path)
    ctx = ToolContext(AgentIdentity(cwd=tmp_path))
    create, delete = TeamCreate(lead), TeamDelete(lead)

    def call(tool: Any, **raw: Any) -> str:
        return str(tool.run(tool.input_model.model_validate(raw), ctx))

    assert call(create, team_name="first").startswith("Team 'first' created")
    with pytest.raises(ToolError, match="^you already lead team 'first'; one team at a time"):
        call(create, team_name="second")
    assert not TeamStore(home).exists("second")
    TeamStore(home).add_member("first", Member(agent_id="busy@first", name="busy", is_active=True))
    with pytest.raises(ToolError, match="^team 'first' still has active teammates \\(busy\\); ask them to shut down"):
        call(delete)
    assert TeamStore(home).exists("first") and lead.team == "first"
    TeamStore(home).update_member("first", "busy", is_active=False)
    assert call(delete) == "Team 'first' deleted."
    assert not TeamStore(home).exists("first") and (lead.team, ctx.identity.team) == (None, None)
    assert call(create, team_name="second").startswith("Team 'second' created") and ctx.identity.team == "second"


def test_a_lead_that_deletes_its_team_and_creates_another_follows_the_new_one_to_the_end(
        home: Home, api: FakeAnthropicServer, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()

    def second_team(_now: str) -> ScriptedReply:
        deadline = time.monotonic() + 20  # the model answers once x has really left (TeamDelete refuses before)
        while _present(home, "ateam", "x") and time.monotonic() < deadline:
            time.sleep(0.05)
        return _calls(("TeamDelete", {}), ("TeamCreate", {"team_name": "bteam"}),
                      ("Agent", {"description": "y", "prompt": "Y JOB", "team_name": "bteam", "name": "y"}))

    api.enqueue(tool_use_reply("TeamCreate", {"team_name": "ateam"}),
                tool_use_reply("Agent", {"description": "x", "prompt": "X JOB", "team_name": "ateam", "name": "x"}),
                text_reply("started x"), when=LEAD)
    api.enqueue(_lead_script(
        ("X DONE", lambda _: _calls(("SendMessage", {"to": "x", "message": {"type": "shutdown_request"}}))),
        ("shut down: approved", second_team),
        ("Y HELLO", lambda _: _calls(("SendMessage", {"to": "y", "message": {"type": "shutdown_request"}})))),
        when=LEAD, repeat=True)
    api.enqueue(tool_use_reply("SendMessage", {"to": "team-lead", "message": "X DONE"}), text_reply("x done"),
                when="X JOB")
    api.enqueue(text_reply("ok"), when="X JOB", repeat=True)
    api.enqueue(tool_use_reply("SendMessage", {"to": "team-lead", "message": "Y HELLO"}), text_reply("y done"),
                when="Y JOB")
    api.enqueue(text_reply("ok"), when="Y JOB", repeat=True)

    outcome = _run_lead(home, api, work, "one team, then another")

    assert (outcome.reason, outcome.team) == ("done", "bteam")
    assert outcome.report is not None and outcome.report.team == "bteam" and outcome.report.ok
    assert [(m["name"], m["stopped"]) for m in outcome.report.members] == [("y", "stopped")]  # asked by the lead
    leads = json.dumps([r.body["messages"] for r in api.requests if LEAD in json.dumps(r.body)])
    assert "Team 'ateam' deleted." in leads and "Y HELLO" in leads  # the new team's inbox reached the lead
    assert not TeamStore(home).exists("ateam")
    assert not any(m.present() for m in TeamStore(home).get("bteam").members if m.name != "team-lead")
    assert teammate_pids(home) == []


def test_a_headless_lead_model_answers_its_teammates_plan(home: Home, api: FakeAnthropicServer,
                                                          tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()

    def approve(now: str) -> ScriptedReply:
        found = re.search(r"plan_approval_request (\S+):", now)
        assert found is not None, now
        return _calls(("SendMessage", {"to": "planner", "message": {
            "type": "plan_approval_response", "request_id": found[1], "approve": True, "feedback": "go ahead"}}))

    api.enqueue(tool_use_reply("TeamCreate", {"team_name": "plans"}),
                tool_use_reply("Agent", {"description": "p", "prompt": "PLANNER JOB", "team_name": "plans",
                                         "name": "planner", "plan_mode_required": True}),
                text_reply("started the planner"), when=LEAD)
    api.enqueue(_lead_script(
        ("plan_approval_request", approve),
        ("PLAN DONE", lambda _: _calls(("SendMessage", {"to": "planner", "message": {"type": "shutdown_request"}})))),
        when=LEAD, repeat=True)
    api.enqueue(tool_use_reply("ExitPlanMode", {"plan": "1. write x.txt"}),
                tool_use_reply("Write", {"file_path": "x.txt", "content": "planned\n"}),
                tool_use_reply("SendMessage", {"to": "team-lead", "message": "PLAN DONE"}),
                text_reply("done"), when="PLANNER JOB")
    api.enqueue(text_reply("ok"), when="PLANNER JOB", repeat=True)

    outcome = _run_lead(home, api, work, "plan first", policy=LeadPolicy(allow=["Write"]))

    assert outcome.reason == "done" and outcome.report is not None
    leads = [r for r in api.requests if LEAD in json.dumps(r.body)]
    assert any("plan_approval_request" in json.dumps(r.body) and "1. write x.txt" in json.dumps(r.body)
               for r in leads)
    plans = [d for d in outcome.report.decisions if d["kind"] == "plan"]
    assert [(d["decision"], d["by"]) for d in plans] == [("allow", "lead")]  # the model's answer, not a default
    assert (work / "x.txt").read_text() == "planned\n"
    assert teammate_pids(home) == []


def test_a_named_agent_without_a_team_starts_a_teammate_in_an_implicit_session_team(
        home: Home, api: FakeAnthropicServer, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    api.enqueue(tool_use_reply("Agent", {"description": "a", "prompt": "IMPLICIT JOB", "name": "helper"}),
                text_reply("waiting"), when=LEAD)
    api.enqueue(text_reply("still waiting"), when=LEAD, repeat=True)
    api.enqueue(text_reply("done with it"), when="IMPLICIT JOB", repeat=True)

    _run_lead(home, api, work, "start a helper", timeout=4)

    teams = [t.name for t in TeamStore(home).list()]
    assert len(teams) == 1 and re.fullmatch(r"session-[0-9a-f]{8}", teams[0])
    assert TeamStore(home).get(teams[0]).member("helper") is not None
    leads = [r for r in api.requests if LEAD in json.dumps(r.body)]
    assert "Started teammate 'helper'" in json.dumps(leads[1].body["messages"][-1])
