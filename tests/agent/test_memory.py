"""Agent memory directories and the memory section of the system prompt, with real files and git repos."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarm.agent.definitions import AgentDefinition
from swarm.agent.memory import MEMORY_LINES, memory_dir, memory_prompt
from swarm.agent.prompts import agent_system_prompt
from tests.runtime.worktrees.conftest import git


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    (path / "src" / "deep").mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    return path


def agent(memory: str | None) -> AgentDefinition:
    return AgentDefinition.model_validate({"name": "reviewer", "prompt": "You review.", "source": "project",
                                           "memory": memory})


def test_memory_dirs_per_scope_from_the_project_root(repo: Path, config: Path, env: dict[str, str]) -> None:
    cwd = repo / "src" / "deep"
    assert memory_dir(agent("user"), cwd, env=env) == config / "agent-memory" / "reviewer"
    assert memory_dir(agent("project"), cwd, env=env) == repo.resolve() / ".claude" / "agent-memory" / "reviewer"
    assert memory_dir(agent("local"), cwd, env=env) == repo.resolve() / ".claude" / "agent-memory-local" / "reviewer"
    assert memory_dir(agent(None), cwd, env=env) is None


def test_outside_a_repository_the_project_is_the_cwd(tmp_path: Path, env: dict[str, str]) -> None:
    cwd = tmp_path / "plain"
    cwd.mkdir()
    assert memory_dir(agent("project"), cwd, env=env) == cwd.resolve() / ".claude" / "agent-memory" / "reviewer"


def test_memory_prompt_says_where_and_shows_memory_md(repo: Path, env: dict[str, str]) -> None:
    directory = repo.resolve() / ".claude" / "agent-memory" / "reviewer"
    directory.mkdir(parents=True)
    (directory / "MEMORY.md").write_text("- tests live in tests/unit\n- see [style](style.md)\n")
    text = memory_prompt(agent("project"), repo, env=env)
    assert f"{directory}/" in text and "project-scope" in text
    assert text.endswith("## MEMORY.md\n- tests live in tests/unit\n- see [style](style.md)")
    assert memory_prompt(agent(None), repo, env=env) == ""


def test_an_empty_or_missing_memory_md_is_announced(repo: Path, env: dict[str, str]) -> None:
    text = memory_prompt(agent("local"), repo, env=env)
    assert "local-scope" in text and "Your MEMORY.md is empty" in text
    assert not (repo / ".claude").exists()  # nothing written just by building the prompt


def test_a_long_memory_md_is_capped(config: Path, repo: Path, env: dict[str, str]) -> None:
    directory = config / "agent-memory" / "reviewer"
    directory.mkdir(parents=True)
    (directory / "MEMORY.md").write_text("".join(f"note {i}\n" for i in range(MEMORY_LINES + 50)))
    text = memory_prompt(agent("user"), repo, env=env)
    assert f"note {MEMORY_LINES - 1}\n" in text and f"note {MEMORY_LINES}\n" not in text
    assert "only its start is shown" in text and "user-scope" in text


def test_the_system_prompt_ends_with_the_memory_section(repo: Path, env: dict[str, str]) -> None:
    directory = repo.resolve() / ".claude" / "agent-memory" / "reviewer"
    directory.mkdir(parents=True)
    (directory / "MEMORY.md").write_text("remember: the CI runs on arm64\n")
    definition = agent("project")
    memory = memory_prompt(definition, repo, env=env)
    text = agent_system_prompt(definition.prompt, repo, model="m", tools=["Read", "Write"], memory=memory)
    assert text.startswith("You review.\n\n# Environment\n")
    assert text.index("Tools: Read, Write") < text.index("# Persistent agent memory")
    assert text.endswith("remember: the CI runs on arm64")
