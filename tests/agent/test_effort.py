"""Effort per agent: a definition's ``effort:`` (Claude Code's field), through the assembler, to every request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swarm.agent.assembly import Catalogs, Parent, Seat, assemble
from swarm.agent.definitions import AgentDefinition, parse_definition_file
from swarm.agent.tools import core_tools
from tests.fakes import FakeAnthropicServer, text_reply, tool_use_reply
from swarm.agent.config_files import ConfigFileError

SKILLS = Catalogs.empty().skills


def _file(tmp_path: Path, effort: str) -> Path:
    path = tmp_path / "thinker.md"
    path.write_text(f"---\nname: thinker\ndescription: thinks hard\neffort: {effort}\n---\nThink.\n")
    return path


def test_a_definition_reads_effort_from_its_frontmatter(tmp_path: Path) -> None:
    assert parse_definition_file(_file(tmp_path, "xhigh"), "project").effort == "xhigh"


def test_an_unknown_effort_is_refused_with_the_values_to_use(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match="effort.*low, medium, high, xhigh or max"):
        parse_definition_file(_file(tmp_path, "extreme"), "project")


@pytest.mark.parametrize(("asked", "definition", "parent", "expected"), [
    (None, "low", "max", "low"),     # the definition's over the parent's
    ("high", "low", None, "high"),   # an explicit ask over the definition's
    (None, None, "medium", "medium"),  # else the parent's
    (None, None, None, None),
])
def test_the_assembled_agent_carries_its_effort(tmp_path: Path, asked: str | None, definition: str | None,
                                                parent: str | None, expected: str | None) -> None:
    made = AgentDefinition(name="thinker", description="d", prompt="Think.", source="project", effort=definition)
    agent = assemble(made, Seat(role="subagent", cwd=tmp_path, env={}, skills=SKILLS),
                     Parent(model=None, write_roots=None, effort=parent), tools=core_tools(),  # type: ignore[arg-type]
                     asked_effort=asked)  # type: ignore[arg-type]
    assert agent.effort == expected


def test_a_subagent_thinks_with_its_definitions_effort_else_its_parents(api: FakeAnthropicServer,
                                                                       tmp_path: Path) -> None:
    from swarm.agent.definitions import load_agents
    from swarm.agent.headless import MainOptions, run_headless
    from swarm.agent.limits import Limits
    from tests.agent.subagent_helpers import api_env, provider_for

    agents = json.dumps({"deep": {"description": "d", "prompt": "Deep.", "model": "claude-opus-5-5", "effort": "max"},
                         "plain": {"description": "p", "prompt": "Plain.", "model": "claude-opus-5-5"}})
    api.enqueue(tool_use_reply("Agent", {"description": "a", "prompt": "go deep", "subagent_type": "deep"},
                               tool_id="toolu_a"), text_reply("deep done"),
                tool_use_reply("Agent", {"description": "b", "prompt": "go plain", "subagent_type": "plain"},
                               tool_id="toolu_b"), text_reply("plain done"), text_reply("all done"))
    env = api_env(api)
    catalog = load_agents(tmp_path, env=env, cli_json=agents)
    main = MainOptions(catalog=catalog, env=env, make_provider=lambda model: provider_for(env, model),
                       agents_dir=tmp_path / "agents", effort="low")
    with provider_for(env, "claude-opus-5-5") as parent:
        assert run_headless("work", parent, cwd=tmp_path, limits=Limits(max_turns=10), main=main).ok
    efforts = [r.body.get("output_config", {}).get("effort") for r in api.requests]
    assert efforts == ["low", "max", "low", "low", "low"]  # main, deep child, main, plain child (inherits), main
