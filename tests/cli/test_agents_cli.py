"""``swarm agents`` through the installed executable, with real definition files and a real git repository."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

Run = Callable[..., subprocess.CompletedProcess[str]]


def write_agent(directory: Path, stem: str, frontmatter: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{stem}.md"
    path.write_text(f"---\n{frontmatter}\n---\nbody\n")
    return path


@pytest.fixture
def user_agents() -> Path:
    return Path(os.environ["CLAUDE_CONFIG_DIR"]) / "agents"  # tests/conftest.py: a tmp dir per test


def test_json_lists_active_definitions_with_source_and_what_they_override(
        run_exe: Run, repo: Path, user_agents: Path) -> None:
    write_agent(user_agents, "reviewer", "description: user reviewer")
    project = write_agent(repo / ".claude" / "agents", "reviewer", "description: project reviewer\n"
                                                                    "tools: Read, Grep\nmodel: haiku")
    write_agent(repo / ".swarm" / "agents", "Explore", "description: our explorer")
    cli = json.dumps({"Plan": {"description": "cli planner", "prompt": "Plan it.", "tools": ["Read"]}})

    result = run_exe("agents", "--json", "--cwd", str(repo), "--agents", cli)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    keys = ["name", "description", "source", "path", "overrides", "tools", "model"]
    listed = {entry["name"]: {k: entry[k] for k in keys} for entry in json.loads(result.stdout)}
    assert listed["reviewer"] == {"name": "reviewer", "description": "project reviewer", "source": "project",
                                  "path": str(project), "overrides": "user", "tools": ["Read", "Grep"],
                                  "model": "haiku"}
    assert (listed["Explore"]["source"], listed["Explore"]["overrides"]) == ("project", "built-in")
    assert listed["Plan"] == {"name": "Plan", "description": "cli planner", "source": "cli", "path": None,
                              "overrides": "built-in", "tools": ["Read"], "model": None}
    assert (listed["general-purpose"]["source"], listed["general-purpose"]["tools"]) == ("built-in", None)


def test_broken_files_are_one_warning_each_on_stderr_and_the_rest_is_listed(run_exe: Run, repo: Path) -> None:
    agents = repo / ".claude" / "agents"
    write_agent(agents, "good", "description: works")
    bad_mode = write_agent(agents, "bad-mode", "description: x\npermissionMode: yolo")
    bad_yaml = write_agent(agents, "bad-yaml", "description: [oops")

    result = run_exe("agents", "--cwd", str(repo))
    assert result.returncode == 0
    lines = result.stderr.splitlines()
    assert len(lines) == 2 and "Traceback" not in result.stderr
    assert any(line.startswith(f"swarm: warning: {bad_mode}: permissionMode: ") for line in lines)
    assert any(line.startswith(f"swarm: warning: {bad_yaml}: frontmatter: ") for line in lines)
    names = [line.split()[0] for line in result.stdout.splitlines()[1:]]
    assert names == ["Explore", "general-purpose", "good", "Plan", "swarm-guide", "Verification"]


def test_the_table_shows_source_and_overrides(run_exe: Run, repo: Path, user_agents: Path) -> None:
    write_agent(user_agents, "general-purpose", "description: my default agent")
    result = run_exe("agents", "--cwd", str(repo))
    assert result.returncode == 0, result.stderr
    [row] = [line for line in result.stdout.splitlines() if line.startswith("general-purpose")]
    assert row.split()[:5] == ["general-purpose", "user", "inherit", "all", "built-in"]


@pytest.mark.parametrize("value", ["{not json", '{"x": 1}', '{"x": {"prompt": "no description"}}'])
def test_bad_agents_json_is_a_one_line_usage_error(run_exe: Run, repo: Path, value: str) -> None:
    result = run_exe("agents", "--cwd", str(repo), "--agents", value)
    assert result.returncode == 2
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith("swarm: error: --agents: ")


def test_json_lists_verification_and_the_guide_with_their_fields(run_exe: Run, repo: Path) -> None:
    result = run_exe("agents", "--json", "--cwd", str(repo))
    assert result.returncode == 0, result.stderr
    listed = {entry["name"]: entry for entry in json.loads(result.stdout)}
    verification, guide = listed["Verification"], listed["swarm-guide"]
    assert {k: verification[k] for k in ("source", "tools", "model", "background", "color", "read_only")} == {
        "source": "built-in", "tools": ["Read", "Glob", "Grep", "Bash"], "model": "inherit", "background": True,
        "color": "red", "read_only": True}
    assert "Write" in verification["disallowed_tools"] and "Edit" in verification["disallowed_tools"]
    assert "not fixing" in verification["critical_system_reminder"]
    assert {k: guide[k] for k in ("source", "tools", "model", "permission_mode", "read_only")} == {
        "source": "built-in", "tools": ["Read", "Glob", "Grep"], "model": "haiku", "permission_mode": "dontAsk",
        "read_only": True}
    assert guide["critical_system_reminder"] is None and "swarm" in guide["description"]
