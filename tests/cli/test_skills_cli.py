"""``swarm skills`` through the installed executable, with real skill folders in a real git repository."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

Run = Callable[..., subprocess.CompletedProcess[str]]
KEYS = ["name", "description", "source", "path", "directory", "context", "agent", "model", "allowed_tools",
        "disable_model_invocation", "user_invocable", "argument_hint"]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def config() -> Path:
    return Path(os.environ["CLAUDE_CONFIG_DIR"])  # tests/conftest.py: a tmp dir per test


def test_json_lists_every_active_skill_with_its_source_and_flags(run_exe: Run, repo: Path, config: Path) -> None:
    write(config / "skills" / "notes" / "SKILL.md", "---\ndescription: user notes\n---\nTake notes.\n")
    write(config / "skills" / "oncall" / "SKILL.md", "---\ndescription: user on-call\n---\nAsk the pager.\n")
    oncall = write(repo / ".claude" / "skills" / "oncall" / "SKILL.md",
                   "---\ndescription: Who is on call\ncontext: fork\nagent: Explore\nallowed-tools: Read Bash(cat *)\n"
                   "model: haiku\nargument-hint: '[team]'\ndisable-model-invocation: true\n---\nSay blueberry.\n")
    review = write(repo / ".claude" / "commands" / "review.md", "Review $ARGUMENTS\n")

    result = run_exe("skills", "--json", "--cwd", str(repo))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    listed = json.loads(result.stdout)
    assert [entry["name"] for entry in listed] == ["notes", "oncall", "review"]
    assert all(list(entry) == KEYS for entry in listed)
    by_name = {entry["name"]: entry for entry in listed}
    assert by_name["oncall"] == {
        "name": "oncall", "description": "Who is on call", "source": "project", "path": str(oncall),
        "directory": str(oncall.parent), "context": "fork", "agent": "Explore", "model": "haiku",
        "allowed_tools": ["Read", "Bash(cat *)"], "disable_model_invocation": True, "user_invocable": True,
        "argument_hint": "[team]"}
    assert by_name["notes"]["source"] == "user"
    assert by_name["notes"]["directory"] == str(config / "skills" / "notes")
    assert (by_name["review"]["source"], by_name["review"]["path"]) == ("command", str(review))


def test_broken_skills_are_one_warning_each_on_stderr_and_the_rest_is_listed(run_exe: Run, repo: Path) -> None:
    skills = repo / ".claude" / "skills"
    write(skills / "good" / "SKILL.md", "---\ndescription: works\n---\nGo.\n")
    bad_yaml = write(skills / "bad-yaml" / "SKILL.md", "---\ndescription: [oops\n---\nGo.\n")
    bad_flag = write(skills / "bad-flag" / "SKILL.md", "---\ncontext: sideways\n---\nGo.\n")

    result = run_exe("skills", "--cwd", str(repo))
    assert result.returncode == 0
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 2
    assert any(line.startswith(f"swarm: warning: {bad_yaml}: frontmatter: invalid YAML") for line in lines)
    assert any(line.startswith(f"swarm: warning: {bad_flag}: context: ") for line in lines)
    assert [line.split()[0] for line in result.stdout.splitlines()[1:]] == ["good"]


def test_the_table_shows_source_invocation_context_and_tools(run_exe: Run, repo: Path) -> None:
    write(repo / ".claude" / "skills" / "fork-me" / "SKILL.md",
          "---\ndescription: Runs apart\ncontext: fork\nagent: Plan\nallowed-tools: Read\nuser-invocable: false\n"
          "---\nGo.\n")
    write(repo / ".swarm" / "skills" / "plain" / "SKILL.md", "---\ndescription: Plain one\n---\nGo.\n")

    result = run_exe("skills", "--cwd", str(repo))
    assert result.returncode == 0, result.stderr
    header, *rows = [line.split() for line in result.stdout.splitlines()]
    assert header == ["NAME", "SOURCE", "INVOKE", "CONTEXT", "AGENT", "ALLOWED-TOOLS", "DESCRIPTION"]
    assert rows == [["fork-me", "project", "model", "fork", "Plan", "Read", "Runs", "apart"],
                    ["plain", "project", "model,user", "-", "-", "-", "Plain", "one"]]


def test_no_skills_is_an_empty_list(run_exe: Run, repo: Path) -> None:
    result = run_exe("skills", "--json", "--cwd", str(repo))
    assert (result.returncode, result.stdout, result.stderr) == (0, "[]\n", "")
