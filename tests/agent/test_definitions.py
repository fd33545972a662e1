"""Agent definitions from real files in tmp dirs and real git repositories: sources, precedence, bad files."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

from swarm.agent import prompts
from swarm.agent.config_files import claude_config_dir
from swarm.agent.definitions import (
    AgentDefinition,
    builtin_agents,
    load_agents,
)
from swarm.errors import UsageError
from tests.runtime.worktrees.conftest import git


def write_agent(directory: Path, stem: str, frontmatter: str, body: str = "") -> Path:
    """``<directory>/<stem>.md`` with ``frontmatter`` between --- lines, then ``body``."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{stem}.md"
    path.write_text(f"---\n{frontmatter.strip()}\n---\n{body}")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "outer" / "repo"
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    return path


def test_builtins_general_purpose_has_every_tool_and_explore_plan_are_read_only() -> None:
    found = {d.name: d for d in builtin_agents()}
    assert set(found) == {"general-purpose", "Explore", "Plan", "Verification", "swarm-guide"}
    assert found["general-purpose"].tools is None and not found["general-purpose"].omit_claude_md
    for name in ("Explore", "Plan"):
        definition = found[name]
        assert definition.tools == ["Read", "Glob", "Grep", "Bash"]
        assert {"Write", "Edit", "Agent"} <= set(definition.disallowed_tools)
        assert definition.omit_claude_md and definition.builtin and definition.source == "built-in"
        assert "READ-ONLY" in definition.prompt and definition.description
    assert "Critical files" in found["Plan"].prompt


def test_precedence_cli_over_project_over_user_over_builtin(repo: Path, config: Path, env: dict[str, str]) -> None:
    write_agent(config / "agents", "reviewer", "description: user reviewer", "user body")
    write_agent(config / "agents", "Explore", "description: my explorer\ntools: Read", "user explore")
    write_agent(repo / ".claude" / "agents", "reviewer", "description: project reviewer", "project body")
    write_agent(repo / ".claude" / "agents", "general-purpose", "description: project gp", "gp body")

    catalog = load_agents(repo, env=env)
    assert catalog.warnings == []
    reviewer = catalog.get("reviewer")
    assert reviewer is not None
    assert (reviewer.source, reviewer.overrides, reviewer.prompt) == ("project", "user", "project body")
    assert reviewer.path == repo / ".claude" / "agents" / "reviewer.md"
    explore = catalog.get("Explore")
    assert explore is not None and (explore.source, explore.overrides, explore.tools) == ("user", "built-in", ["Read"])
    general = catalog.get("general-purpose")
    assert general is not None and (general.source, general.overrides) == ("project", "built-in")
    plan = catalog.get("Plan")
    assert plan is not None and (plan.source, plan.overrides) == ("built-in", None)
    assert catalog.names() == ["Explore", "general-purpose", "Plan", "reviewer", "swarm-guide", "Verification"]

    cli = '{"reviewer": {"description": "cli reviewer", "prompt": "cli body", "tools": ["Grep"], "maxTurns": 4}}'
    reviewer = load_agents(repo, env=env, cli_json=cli).get("reviewer")
    assert reviewer is not None
    assert (reviewer.source, reviewer.overrides, reviewer.prompt, reviewer.path) == ("cli", "project", "cli body", None)
    assert (reviewer.tools, reviewer.max_turns) == (["Grep"], 4)


def test_nearer_project_directories_win_and_the_walk_stops_at_the_repository_root(
        repo: Path, tmp_path: Path, env: dict[str, str]) -> None:
    write_agent(tmp_path / "outer" / ".claude" / "agents", "outside", "description: above the repository")
    write_agent(repo / ".claude" / "agents", "shared", "description: root")
    write_agent(repo / ".claude" / "agents", "rooted", "description: only at the root")
    write_agent(repo / "pkg" / ".claude" / "agents", "shared", "description: pkg claude")
    write_agent(repo / "pkg" / ".swarm" / "agents", "shared", "description: pkg swarm")
    write_agent(repo / "pkg" / "sibling" / ".claude" / "agents", "sibling", "description: not on the way")
    cwd = repo / "pkg" / "deep"
    cwd.mkdir(parents=True)

    catalog = load_agents(cwd, env=env)
    shared = catalog.get("shared")
    assert shared is not None and shared.description == "pkg swarm" and shared.overrides == "project"
    assert catalog.get("rooted") is not None
    assert catalog.get("outside") is None and catalog.get("sibling") is None


def test_outside_a_repository_every_directory_up_to_the_filesystem_root_counts(
        tmp_path: Path, env: dict[str, str]) -> None:
    write_agent(tmp_path / ".claude" / "agents", "far", "description: far up")
    cwd = tmp_path / "a" / "b"
    cwd.mkdir(parents=True)
    far = load_agents(cwd, env=env).get("far")
    assert far is not None and far.source == "project"


def test_the_user_directory_is_not_read_again_as_a_project_one(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write_agent(home / ".claude" / "agents", "mine", "description: user level")
    cwd = home / "project"
    cwd.mkdir(parents=True)
    env = {"HOME": str(home)}
    assert claude_config_dir(env) == home / ".claude"
    mine = load_agents(cwd, env=env).get("mine")
    assert mine is not None and (mine.source, mine.overrides) == ("user", None)


def test_claude_config_dir_prefers_the_variable() -> None:
    assert claude_config_dir({"CLAUDE_CONFIG_DIR": "/x/conf", "HOME": "/h"}) == Path("/x/conf")
    assert claude_config_dir({"HOME": "/h"}) == Path("/h/.claude")


def test_a_broken_file_is_one_warning_naming_file_and_field_and_the_others_load(
        repo: Path, env: dict[str, str]) -> None:
    agents = repo / ".claude" / "agents"
    good = write_agent(agents, "good", "description: fine\nmodel: haiku", "Be good.")
    broken = {
        write_agent(agents, "mode", "description: x\npermissionMode: yolo"): "permissionMode",
        write_agent(agents, "yaml", "description: [unclosed"): "frontmatter",
        write_agent(agents, "turns", "description: x\nmaxTurns: ten"): "maxTurns",
        write_agent(agents, "nodesc", "tools: Read"): "description",
        write_agent(agents, "bg", "description: x\nbackground: [1]"): "background",
        write_agent(agents, "iso", "description: x\nisolation: remote"): "isolation",
        write_agent(agents, "mem", "description: x\nmemory: global"): "memory",
        write_agent(agents, "badname", "name: has space\ndescription: x"): "name",
    }
    (agents / "plain.md").write_text("no frontmatter at all\n")
    broken[agents / "plain.md"] = "frontmatter"

    catalog = load_agents(repo, env=env)
    assert len(catalog.warnings) == len(broken)
    for path, field in broken.items():
        [line] = [w for w in catalog.warnings if w.startswith(f"{path}: ")]
        assert line.startswith(f"{path}: {field}: ") and "; " in line and "\n" not in line
        assert catalog.get(path.stem) is None
    loaded = catalog.get("good")
    assert loaded is not None and (loaded.path, loaded.model, loaded.prompt) == (good, "haiku", "Be good.")


def test_tools_take_a_list_or_a_comma_separated_string(repo: Path, env: dict[str, str]) -> None:
    agents = repo / ".claude" / "agents"
    write_agent(agents, "commas", "description: x\ntools: Read, Grep,Bash\ndisallowedTools: Write, Edit")
    write_agent(agents, "listed", "description: x\ntools:\n  - Read\n  - Glob\ndisallowedTools: [Bash]")
    write_agent(agents, "spawner", "description: x\ntools: Agent(Explore, Plan), Read")
    write_agent(agents, "star", "description: x\ntools: '*'")
    write_agent(agents, "absent", "description: x")

    catalog = load_agents(repo, env=env)

    def tools(name: str) -> tuple[list[str] | None, list[str]]:
        found = catalog.get(name)
        assert found is not None
        return found.tools, found.disallowed_tools

    assert tools("commas") == (["Read", "Grep", "Bash"], ["Write", "Edit"])
    assert tools("listed") == (["Read", "Glob"], ["Bash"])
    assert tools("spawner") == (["Agent(Explore, Plan)", "Read"], [])
    assert tools("star") == (["*"], [])
    assert tools("absent") == (None, [])


def test_every_field_is_read_and_unknown_keys_are_kept_in_extra(repo: Path, env: dict[str, str]) -> None:
    write_agent(repo / ".swarm" / "agents", "file-stem", """
description: Does everything
model: inherit
permissionMode: acceptEdits
maxTurns: 7
background: true
isolation: worktree
color: blue
memory: project
omitClaudeMd: true
effort: high
hooks: {PreToolUse: []}
""", "You are thorough.\n\nAlways.\n")
    catalog = load_agents(repo, env=env)
    definition = catalog.get("file-stem")
    assert definition == AgentDefinition(
        name="file-stem", description="Does everything", prompt="You are thorough.\n\nAlways.", model="inherit",
        permission_mode="acceptEdits", max_turns=7, background=True, isolation="worktree", color="blue",
        memory="project", omit_claude_md=True, effort="high", source="project",
        path=repo / ".swarm" / "agents" / "file-stem.md", extra={"hooks": {"PreToolUse": []}})
    assert catalog.warnings == []


def test_a_skills_list_loads_without_warnings(repo: Path, env: dict[str, str]) -> None:
    path = write_agent(repo / ".claude" / "agents", "skilled", "description: x\nskills: [lint, format]")
    catalog = load_agents(repo, env=env)
    skilled = catalog.get("skilled")
    assert skilled is not None and skilled.skills == ["lint", "format"]
    assert catalog.warnings == [] and path.exists()


@pytest.mark.parametrize("text, says", [
    ("{not json", "not valid JSON"),
    ("[" * 100_000 + "]" * 100_000, "not valid JSON (nested too deep)"),
    ('["reviewer"]', "expected a JSON object"),
    ('{"reviewer": "be nice"}', "reviewer: expected an object"),
    ('{"reviewer": {"prompt": "p"}}', "reviewer: description: missing"),
    ('{"reviewer": {"description": "d", "permissionMode": "yolo"}}', "reviewer: permissionMode:"),
    ('{"bad name": {"description": "d"}}', "bad name"),
])
def test_bad_cli_json_is_a_one_line_usage_error(repo: Path, env: dict[str, str], text: str, says: str) -> None:
    with pytest.raises(UsageError) as caught:
        load_agents(repo, env=env, cli_json=text)
    message = str(caught.value)
    assert message.startswith("--agents: ") and says in message and "\n" not in message


def test_system_prompt_is_the_body_then_the_environment(tmp_path: Path) -> None:
    custom = AgentDefinition(name="reviewer", prompt="You review diffs.\n", source="project")
    text = prompts.agent_system_prompt(custom.prompt, tmp_path, model="claude-haiku-x", tools=["Read", "Grep"])
    assert text.startswith("You review diffs.\n\n# Environment\n")
    assert f"Working directory: {tmp_path}" in text and f"Platform: {platform.system().lower()}" in text
    assert "Model: claude-haiku-x" in text and text.endswith("Tools: Read, Grep")
    assert text == prompts.agent_system_prompt(custom.prompt, tmp_path, model="claude-haiku-x", tools=["Read", "Grep"])

    empty = AgentDefinition(name="blank", source="cli")
    assert prompts.agent_system_prompt(empty.prompt, tmp_path, model="m", tools=[]).startswith(prompts.BASE + "\n\n")
