"""System prompts as the assembler builds them: the main agent's, a lead's addendum, a teammate's shared prompt."""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

import psutil
import pytest

from swarm.agent.assembly import Catalogs, Parent, Seat, TeamSeat, assemble
from swarm.agent.definitions import AgentDefinition
from swarm.agent.instructions import context_block
from swarm.agent.tools import core_tools
from swarm.agent.tools.shell import default_shell
from swarm.agent.tools.team_tools import team_tools
from swarm.backends.procs import kill_tree
from swarm.core.home import Home
from swarm.core.teams import TeamStore
from swarm.runtime.lead import LeadTeam
from swarm.runtime.spawn import SpawnRequest, spawn
from tests.backends.helpers import retry_until
from tests.fakes import FakeAnthropicServer, text_reply

pytestmark = pytest.mark.usefixtures("served")  # teammates forked from the home's CLI server (tests.zygote)

SKILLS = Catalogs.empty().skills
LEAD_MARKS = ("[idle]", "shutdown_request", "TaskUpdate", "Never sleep")


def _lead(tmp_path: Path) -> LeadTeam:
    return LeadTeam(Home(tmp_path / "home"), {}, tmp_path)


def _main(tmp_path: Path, *, tools: list[Any], definition: AgentDefinition | None = None) -> str:
    return assemble(definition, Seat(role="main", cwd=tmp_path, env={}, skills=SKILLS),
                    Parent(model=None, write_roots=[tmp_path]), tools=tools,
                    kept=[t for t in tools if t.name.startswith("Team")], asked_model="claude-x-1").system


def _teammate(tmp_path: Path, name: str, definition: AgentDefinition | None) -> Any:
    return assemble(definition, Seat(role="teammate", cwd=tmp_path, env={}, skills=SKILLS),
                    Parent(model=None, write_roots=[tmp_path]), tools=core_tools(),
                    team=TeamSeat(name=name, team="crew"))


def test_the_main_prompt_names_the_model_os_and_shell_and_guides_the_work(tmp_path: Path) -> None:
    system = _main(tmp_path, tools=core_tools())
    assert "Model: claude-x-1" in system and f"OS: {platform.system()}" in system
    assert f"Shell: {default_shell()}" in system and f"Working directory: {tmp_path}" in system
    for heading in ("# Doing the work", "# Using the tools", "# Git"):
        assert heading in system
    assert system == _main(tmp_path, tools=core_tools())  # the cached prefix: the same bytes every time


def test_only_an_agent_holding_the_team_tools_gets_the_lead_addendum(tmp_path: Path) -> None:
    plain = _main(tmp_path, tools=core_tools())
    lead = _main(tmp_path, tools=[*core_tools(), *team_tools(_lead(tmp_path))])
    assert not any(mark in plain for mark in LEAD_MARKS)
    assert all(mark in lead for mark in LEAD_MARKS) and lead.startswith(plain.split("# Environment")[0])
    defined = AgentDefinition(name="boss", description="d", prompt="Lead well.", source="project", tools=["Read"])
    assert all(mark in _main(tmp_path, tools=[*core_tools(), *team_tools(_lead(tmp_path))], definition=defined)
               for mark in LEAD_MARKS)  # a lead run as a definition is told too


def test_teammates_of_one_definition_share_the_system_prompt_and_are_named_in_their_first_message(
        tmp_path: Path) -> None:
    reviewer = AgentDefinition(name="reviewer", description="d", prompt="Review.", source="project")
    for definition in (None, reviewer):
        alice, bob = _teammate(tmp_path, "alice", definition), _teammate(tmp_path, "bob", definition)
        assert alice.system == bob.system and "alice" not in alice.system and 'team "crew"' not in alice.system
        assert "SendMessage" in alice.system  # how a team works stays in the shared prompt
        block = context_block(tmp_path, env={}, introduction=alice.introduction)
        assert 'You are "alice", a member of team "crew"' in block and "bob" not in block


def test_two_real_teammates_send_the_same_system_bytes_and_each_is_named_first(tmp_path: Path) -> None:
    """End to end: two teammate processes, the real SDK against the fake API."""
    home = Home(tmp_path / "home")
    TeamStore(home).create("t")
    env = {**os.environ, "ANTHROPIC_API_KEY": "k", "SWARM_HOME": str(home.root)}
    with FakeAnthropicServer() as api:
        api.enqueue(text_reply("done"), text_reply("done"))
        env["ANTHROPIC_BASE_URL"] = api.base_url
        members = [spawn(home, SpawnRequest(team="t", name=name, prompt="hello", backend="subprocess", cwd=tmp_path),
                         env) for name in ("alice", "bob")]
        try:
            retry_until(lambda: len(api.requests) >= 2, timeout=30)
            bodies = [r.body for r in api.requests[:2]]
            assert bodies[0]["system"] == bodies[1]["system"]
            firsts = sorted(str(b["messages"][0]["content"][0]["text"]) for b in bodies)
            assert 'You are "alice", a member of team "t"' in firsts[0]
            assert 'You are "bob", a member of team "t"' in firsts[1]
        finally:
            for member in members:
                if member.pid and psutil.pid_exists(member.pid):
                    kill_tree(member.pid, 1.0)
