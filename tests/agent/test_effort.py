"""Effort per agent: a definition's ``effort:`` (Claude Code's field), through the assembler, to every request."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarm.agent.assembly import Catalogs, Parent, Seat, assemble
from swarm.agent.definitions import AgentDefinition, parse_definition_file
from swarm.agent.tools import core_tools
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
