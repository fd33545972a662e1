"""A lead model never widens what the person granted: modes and directories it asks for when it starts teammates
and answers their plans (``runtime/lead.py`` ``LeadTeam``), through the real ``swarm run -p``."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swarm.agent.assembly import child_mode
from swarm.agent.definitions import AgentDefinition
from swarm.agent.permissions.policy import MODE_WIDTH, wider_than
from swarm.agent.tool_api.context import AgentIdentity, ToolContext, ToolError
from swarm.core.frames import PlanApprovalRequest
from swarm.core.home import Home
from swarm.core.teams import TeamStore
from swarm.runtime.lead import LeadTeam, render
from swarm.runtime.lead_inbox import LeadMessage
from swarm.runtime.sample_repo import make_sample_repo
from swarm.teammate.gate import after_plan
from tests.forked import run_swarm
from tests.teammate.conftest import teammate_pids

pytestmark = pytest.mark.usefixtures("served")  # teammates forked from the home's CLI server (tests.zygote)

LEAD = r"""
[[rules]]
name = "lead"
on = "prompt"
match = 'start (?P<how>\w+)'
[[rules.steps]]
tool_calls = [{{ name = "TeamCreate", input = {{ team_name = "t" }} }}]
[[rules.steps]]
tool_calls = [{{ name = "Agent", input = {{ description = "mate", name = "mate", team_name = "t", prompt = "hello", {spawn} }} }}]
[[rules.steps]]
text = "started"
"""
MATE = r"""
[default]
text = "ready"
"""


def _run(home: Home, repo: Path, tmp_path: Path, spawn: str, *flags: str) -> tuple[subprocess.CompletedProcess[str],
                                                                                 list[dict[str, object]]]:
    """``swarm run -p`` with a lead that creates team t and starts ``mate`` with ``spawn``'s extra Agent inputs."""
    book, mate = tmp_path / "lead.toml", tmp_path / "mate.toml"
    book.write_text(LEAD.format(spawn=spawn))
    mate.write_text(MATE)
    transcript = tmp_path / "lead.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")} | {"SWARM_HOME": str(home.root)}
    done = run_swarm(["run", "-p", "start now", "--playbook", str(book), "--backend", "subprocess",
                      "--teammate-playbook", f"mate={mate}", "--transcript", str(transcript), "--rm", *flags],
                     cwd=repo, env=env, timeout=120)
    results = [block for line in transcript.read_text().splitlines() for block in json.loads(line).get("message", {})
               .get("content", []) if isinstance(block, dict) and block.get("type") == "tool_result"]
    return done, results


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_sample_repo(tmp_path / "repo")


def test_a_lead_model_cannot_start_a_teammate_in_a_wider_mode_than_the_person_granted(
        home: Home, repo: Path, tmp_path: Path) -> None:
    done, results = _run(home, repo, tmp_path, 'mode = "bypassPermissions"')
    assert done.returncode == 0, done.stderr
    refused = [r for r in results if r.get("is_error")]
    assert len(refused) == 1 and "wider than what this session may grant ('default')" in str(refused[0]["content"])
    assert teammate_pids(home) == []


def test_the_person_grants_a_wider_mode_with_permission_mode(home: Home, repo: Path, tmp_path: Path) -> None:
    done, results = _run(home, repo, tmp_path, 'mode = "acceptEdits"', "--permission-mode", "acceptEdits")
    assert done.returncode == 0, done.stderr
    assert not [r for r in results if r.get("is_error")]
    assert any("Started teammate 'mate'" in str(r["content"]) for r in results)


def test_a_lead_model_cannot_start_a_teammate_outside_its_directories(home: Home, repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    done, results = _run(home, repo, tmp_path, f'cwd = "{outside}"')
    assert done.returncode == 0, done.stderr
    refused = [r for r in results if r.get("is_error")]
    assert len(refused) == 1 and f"cwd {outside} is outside the directories you may write" in str(refused[0]["content"])
    assert teammate_pids(home) == []


def test_a_cwd_that_leaves_through_a_symlink_or_dot_dot_is_outside(home: Home, repo: Path, tmp_path: Path) -> None:
    (repo / "out").symlink_to(tmp_path)
    lead = LeadTeam(home, dict(os.environ), repo, backend="subprocess")
    ctx = ToolContext(AgentIdentity(cwd=repo, write_roots=[repo]))
    lead.create("t", None, ctx)
    for cwd in ("out", "../", str(tmp_path)):
        with pytest.raises(ToolError, match="outside the directories you may write"):
            lead.spawn(ctx, name="mate", prompt="p", agent_type=None, model=None, runtime=None, isolation="worktree",
                       plan_mode_required=False, mode=None, cwd=cwd)
    assert [m.name for m in TeamStore(home).get("t").members] == ["team-lead"]


@pytest.mark.parametrize(("ceiling", "asked", "refused"), [
    ("default", "bypassPermissions", True), ("default", "acceptEdits", True), ("default", "plan", False),
    ("default", "dontAsk", False), ("acceptEdits", "bypassPermissions", True), ("acceptEdits", "default", False),
    ("plan", "default", True), ("bypassPermissions", "bypassPermissions", False),
])
def test_a_plan_answer_may_not_raise_a_mode_past_the_grant(home: Home, tmp_path: Path, ceiling: str, asked: str,
                                                            refused: bool) -> None:
    lead = LeadTeam(home, dict(os.environ), tmp_path, ceiling=ceiling)
    lead.create("t", None, ToolContext(AgentIdentity(cwd=tmp_path)))
    if refused:
        with pytest.raises(ToolError, match="wider than what this session may grant"):
            lead.answer_plan("plan-1@mate", True, None, asked)
    else:  # past the grant check, the desk looks the request up
        with pytest.raises(ToolError, match="plan-1@mate"):
            lead.answer_plan("plan-1@mate", True, None, asked)


def test_where_the_person_answers_plans_the_model_cannot(home: Home, tmp_path: Path) -> None:
    lead = LeadTeam(home, dict(os.environ), tmp_path, ceiling="bypassPermissions", person_answers_plans=True)
    lead.create("t", None, ToolContext(AgentIdentity(cwd=tmp_path)))
    with pytest.raises(ToolError, match="the person answers plans in this session"):
        lead.answer_plan("plan-1@mate", True, None, None)
    frame = PlanApprovalRequest(**{"from": "mate", "requestId": "plan-1@mate", "planFilePath": "p.md",
                                   "planContent": "1. do it", "timestamp": "2026-12-05T00:00:00.000Z"})
    message = LeadMessage("mate", "plan_approval_request", "{}", None, "2026-12-05T00:00:00.000Z", frame=frame)
    assert "for the person to approve" in render(message, person_answers_plans=True)
    assert "answer with SendMessage" in render(message)


# -- the invariant, as a property: random chains never end wider than the person's grant -------------------------

MODES = sorted(MODE_WIDTH)


class _Gate:
    """A parent's gate as far as a child's mode is concerned."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def with_mode(self, mode: str) -> _Gate:
        return _Gate(mode)


def _step_down(lead: LeadTeam, mode: str, step: tuple[str, str | None, bool]) -> str:
    """One link of a chain from an agent in ``mode``, through the real rules; a refused link leaves ``mode``."""
    kind, asked, flag = step
    try:
        if kind == "spawn":  # the lead model starts a teammate (plan_mode_required: ``flag``)
            started = lead.teammate_mode(asked)
            return "plan" if flag else started
        if kind == "plan":  # the lead model answers a plan-mode teammate (approve: ``flag``)
            if mode != "plan":
                return mode
            passed = lead.plan_answer_mode(flag, asked)
            return after_plan(passed, lead.teammate_mode(None)) if flag else mode
        if kind == "subagent":  # a definition with permissionMode ``asked``
            definition = AgentDefinition(name="d", description="d", prompt="", source="project", permission_mode=asked)
            return child_mode(_Gate(mode), definition) or mode  # type: ignore[arg-type]
        return mode  # a fork runs in its parent's gate
    except ToolError:
        return mode


@settings(max_examples=400, deadline=None)
@given(grant=st.sampled_from(MODES),
       chain=st.lists(st.tuples(st.sampled_from(["spawn", "plan", "subagent", "fork"]),
                                st.none() | st.sampled_from(MODES), st.booleans()), max_size=8))
def test_no_chain_of_spawns_subagents_forks_and_plan_answers_ends_wider_than_the_grant(
        grant: str, chain: list[tuple[str, str | None, bool]], tmp_path_factory: pytest.TempPathFactory) -> None:
    lead = LeadTeam(Home(tmp_path_factory.getbasetemp() / "unused"), {}, Path("/"), ceiling=grant)
    mode = grant
    for step in chain:
        mode = _step_down(lead, mode, step)
        assert not wider_than(mode, grant), (grant, chain, mode)
