"""The one agent assembler (``swarm.agent.assembly``): each rule once, and every role through it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import psutil
import pytest

from swarm.agent.assembly import Catalogs, Parent, Seat, TeamSeat, assemble
from swarm.agent.definition_model import GENERAL_PURPOSE_TYPE, AgentDefinition
from swarm.agent.executor import ToolGate
from swarm.agent.memory import memory_dir
from swarm.agent.prompts import BASE, TEAMMATE
from swarm.agent.read_only import ReadOnlyGate
from swarm.agent.tools import core_tools
from swarm.agent.tool_api.base import Tool
from swarm.agent.tool_api.context import ToolContext
from swarm.agent.tools.tasks import task_tools
from swarm.agent.tool_catalog import agent_tools
from swarm.backends.procs import kill_tree
from swarm.core.home import Home
from swarm.core.teams import TeamStore
from swarm.models.aliases import DEFAULT_IDS
from swarm.runtime.spawn import SpawnRequest, spawn
from tests.backends.helpers import retry_until
from tests.fakes import FakeAnthropicServer, text_reply

SKILLS = Catalogs.empty().skills


class ModeGate:
    """A gate that only knows its mode (what the assembler reads of a parent's gate)."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def with_mode(self, mode: str) -> ModeGate:
        return ModeGate(mode)

    def check(self, tool: Tool[Any], args: Any, ctx: ToolContext) -> str | None:
        return None


def _definition(**fields: Any) -> AgentDefinition:
    return AgentDefinition(name=fields.pop("name", "reviewer"), description="d", prompt=fields.pop("prompt", "Review."),
                           source="project", **fields)


def _names(tools: list[Tool[Any]]) -> list[str]:
    return [t.name for t in tools]


def test_no_definition_is_swarms_own_prompt_and_every_tool(tmp_path: Path) -> None:
    tools = core_tools()
    agent = assemble(None, Seat(role="main", cwd=tmp_path, env={}, skills=SKILLS),
                     Parent(model=None, write_roots=[tmp_path]), tools=tools)
    assert agent.tools == tools and agent.system.startswith(BASE) and str(tmp_path) in agent.system
    assert agent.write_roots == [tmp_path] and agent.spawnable is None and agent.model is None


def test_a_definitions_tools_cut_the_list_but_what_the_role_keeps_survives(tmp_path: Path) -> None:
    tools = [*core_tools(), *task_tools()]
    listing = next(t for t in tools if t.name == "TaskList")
    agent = assemble(_definition(tools=["Read", "Agent(Explore)"]),
                     Seat(role="teammate", cwd=tmp_path, env={}, skills=SKILLS), Parent(model=None, write_roots=None),
                     tools=tools, kept=[listing], kept_names=["TaskUpdate"])
    assert _names(agent.tools) == ["Read", "TaskList", "TaskUpdate"]
    assert agent.spawnable == frozenset({"Explore"})


def test_a_teammate_whose_type_is_general_purpose_is_a_role_label(tmp_path: Path) -> None:
    general = _definition(name=GENERAL_PURPOSE_TYPE, prompt="You are a general-purpose agent.", tools=["Read"])
    agent = assemble(general, Seat(role="teammate", cwd=tmp_path, env={}, skills=SKILLS),
                     Parent(model=None, write_roots=[tmp_path]), tools=core_tools(),
                     team=TeamSeat(name="alice", team="t", extra="PLAN NOTE"))
    assert _names(agent.tools) == _names(core_tools())  # every tool: the definition's list is not applied
    assert agent.system.startswith(BASE) and TEAMMATE in agent.system and "alice" not in agent.system
    assert 'You are "alice", a member of team "t"' in agent.introduction  # the name opens its first message
    assert agent.system.endswith("PLAN NOTE") and "general-purpose agent" not in agent.system


def test_a_teammate_definition_prompt_comes_first_then_its_team(tmp_path: Path) -> None:
    agent = assemble(_definition(prompt="Review with care."), Seat(role="teammate", cwd=tmp_path, env={}, skills=SKILLS),
                     Parent(model=None, write_roots=[tmp_path]), tools=core_tools(),
                     team=TeamSeat(name="bob", team="t"))
    assert agent.system.startswith("Review with care.")
    assert agent.system.index("Model: default") < agent.system.index(TEAMMATE) and "bob" not in agent.system


@pytest.mark.parametrize(("role", "asked", "definition_model", "parent", "expected"), [
    ("teammate", "opus", None, None, DEFAULT_IDS["opus"]),  # a teammate's alias reaches the API as an id
    ("teammate", None, "haiku", None, DEFAULT_IDS["haiku"]),
    ("teammate", None, "inherit", None, None),  # a process's own agent inherits the provider's default
    ("main", "claude-x-1", "haiku", None, "claude-x-1"),  # the explicit ask wins over the definition
    ("subagent", None, None, "claude-parent-1", "claude-parent-1"),
    ("subagent", "sonnet", "haiku", "claude-parent-1", DEFAULT_IDS["sonnet"]),
    ("subagent", "opus", None, "scripted", "scripted"),  # an offline parent keeps its children offline
])
def test_one_model_rule_for_every_role(tmp_path: Path, role: Any, asked: str | None, definition_model: str | None,
                                       parent: str | None, expected: str | None) -> None:
    agent = assemble(_definition(model=definition_model), Seat(role=role, cwd=tmp_path, env={}, skills=SKILLS),
                     Parent(model=parent, write_roots=None), tools=core_tools(), asked_model=asked)
    assert agent.model == expected


def test_the_subagent_override_applies_to_subagents_only(tmp_path: Path) -> None:
    env = {"SWARM_SUBAGENT_MODEL": "haiku"}
    child = assemble(_definition(), Seat(role="subagent", cwd=tmp_path, env=env, skills=SKILLS),
                     Parent(model="claude-parent-1", write_roots=None), tools=core_tools(), asked_model="opus")
    mate = assemble(_definition(), Seat(role="teammate", cwd=tmp_path, env=env, skills=SKILLS),
                    Parent(model=None, write_roots=None), tools=core_tools(), asked_model="opus")
    assert (child.model, mate.model) == (DEFAULT_IDS["haiku"], DEFAULT_IDS["opus"])


def test_a_subagent_runs_in_its_definitions_mode_unless_the_parents_is_kept(tmp_path: Path) -> None:
    seat = Seat(role="subagent", cwd=tmp_path, env={}, skills=SKILLS)
    planner = _definition(permission_mode="plan")
    narrowed = assemble(planner, seat, Parent(model="m", write_roots=None, gate=ModeGate("default")),
                        tools=core_tools())
    kept = assemble(planner, seat, Parent(model="m", write_roots=None, gate=ModeGate("acceptEdits")),
                    tools=core_tools())
    assert isinstance(narrowed.gate, ModeGate) and narrowed.gate.mode == "plan"
    assert isinstance(kept.gate, ModeGate) and kept.gate.mode == "acceptEdits"


def test_a_read_only_definition_wraps_the_gate(tmp_path: Path) -> None:
    explorer = _definition(tools=["Read", "Grep", "Bash"], read_only=True)
    gate: ToolGate = ModeGate("default")  # type: ignore[assignment]
    for role in ("main", "teammate", "subagent"):
        agent = assemble(explorer, Seat(role=role, cwd=tmp_path, env={}, skills=SKILLS),  # type: ignore[arg-type]
                         Parent(model="m", write_roots=None, gate=gate), tools=core_tools())
        assert isinstance(agent.gate, ReadOnlyGate), role
    writer = assemble(_definition(), Seat(role="main", cwd=tmp_path, env={}, skills=SKILLS),
                      Parent(model="m", write_roots=None, gate=gate), tools=core_tools())
    assert writer.gate is gate


def test_memory_adds_one_write_root_and_its_section(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "user")}
    keeper = _definition(memory="user")
    agent = assemble(keeper, Seat(role="subagent", cwd=tmp_path, env=env, skills=SKILLS),
                     Parent(model="m", write_roots=[tmp_path]), tools=core_tools())
    directory = memory_dir(keeper, tmp_path, env=env)
    assert agent.write_roots == [tmp_path, directory]
    assert f"memory directory at {directory}/" in agent.system


def test_an_unknown_preloaded_skill_is_a_remark_for_the_person(tmp_path: Path) -> None:
    heard: list[str] = []
    assemble(_definition(skills=["nope"]), Seat(role="main", cwd=tmp_path, env={}, skills=SKILLS, note=heard.append),
             Parent(model=None, write_roots=None), tools=core_tools())
    assert len(heard) == 1 and "nope" in heard[0]


def test_a_teammate_started_with_an_alias_sends_the_model_id(tmp_path: Path) -> None:
    """End to end: a real teammate process, ``model: opus``, the real SDK against the fake API."""
    home = Home(tmp_path / "home")
    TeamStore(home).create("t")
    env = {**os.environ, "ANTHROPIC_API_KEY": "k", "SWARM_HOME": str(home.root)}
    with FakeAnthropicServer() as api:
        api.enqueue(text_reply("done"))
        env["ANTHROPIC_BASE_URL"] = api.base_url
        member = spawn(home, SpawnRequest(team="t", name="alice", prompt="hello", backend="subprocess",
                                          model="opus", cwd=tmp_path), env)
        try:
            retry_until(lambda: bool(api.requests), timeout=20)
            assert api.requests[0].body["model"] == DEFAULT_IDS["opus"]
        finally:
            if member.pid and psutil.pid_exists(member.pid):
                kill_tree(member.pid, 1.0)


def test_a_definitions_critical_reminder_goes_with_it_in_every_role_but_a_role_label(tmp_path: Path) -> None:
    rule = _definition(critical_system_reminder="Only verify.")
    for role in ("main", "teammate", "subagent"):
        team = TeamSeat(name="t", team="x") if role == "teammate" else None
        agent = assemble(rule, Seat(role=role, cwd=tmp_path, env={}, skills=SKILLS),
                         Parent(model=None, write_roots=[tmp_path]), tools=core_tools(), team=team)
        assert agent.reminder == "Only verify.", role
    label = _definition(name=GENERAL_PURPOSE_TYPE, critical_system_reminder="Only verify.")
    teammate = assemble(label, Seat(role="teammate", cwd=tmp_path, env={}, skills=SKILLS),
                        Parent(model=None, write_roots=[tmp_path]), tools=core_tools(), team=TeamSeat(name="t", team="x"))
    assert teammate.reminder == ""


def test_in_coordinator_mode_the_main_agent_keeps_three_tools_and_a_subagent_is_untouched(tmp_path: Path) -> None:
    env = {"CLAUDE_CODE_COORDINATOR_MODE": "1"}
    main = assemble(None, Seat(role="main", cwd=tmp_path, env=env, skills=SKILLS),
                    Parent(model=None, write_roots=[tmp_path]), tools=agent_tools(SKILLS, env))
    assert _names(main.tools) == ["SendMessage", "Agent", "TaskStop"] and "coordinator" in main.system
    worker = assemble(_definition(name="worker"), Seat(role="subagent", cwd=tmp_path, env=env, skills=SKILLS),
                      Parent(model=None, write_roots=[tmp_path]), tools=agent_tools(SKILLS, env), background=True)
    assert "Agent" not in _names(worker.tools) and "Bash" in _names(worker.tools)
