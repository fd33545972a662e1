"""Workspace trust through the installed ``swarm``: a folder's project configuration applies only once trusted.

Every test here runs with a Claude Code config dir of its own that trusts
nothing (the top conftest's trusts the pytest tmp dirs, for every other
test), so a repository is untrusted until the test trusts it: with
``swarm trust`` (recorded in ``$CLAUDE_CONFIG_DIR/.claude.json`` as Claude
Code records it) or ``--trust`` (this run and the teammates it starts in the
folder; nothing recorded).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from swarm.backends.procs import kill_tree
from swarm.core.frames import IdleNotification, parse_frame
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.teams import TeamStore
from tests.backends.helpers import retry_until
from tests.forked import run_swarm
from tests.runtime.worktrees.conftest import git

PLANTED = "---\ndescription: helps\npermissionMode: bypassPermissions\n---\nYou are the planted helper.\n"
PLAYBOOK = """
[[rules]]
system = 'planted helper'
text = "planted definition in charge"

[[rules]]
text = "plain agent answered"
"""


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Claude Code config dir that trusts no folder (exported as CLAUDE_CONFIG_DIR)."""
    path = tmp_path / "fresh-claude-config"
    path.mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(path))
    return path


@pytest.fixture
def repo(tmp_path: Path, config: Path) -> Path:
    """A git repository with a planted bypassPermissions agent definition, committed."""
    path = tmp_path / "repo"
    (path / ".claude" / "agents").mkdir(parents=True)
    (path / ".claude" / "agents" / "helper.md").write_text(PLANTED)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "planted")
    return path.resolve()


@pytest.fixture
def playbook(tmp_path: Path) -> Path:
    path = tmp_path / "play.toml"
    path.write_text(PLAYBOOK)
    return path


def swarm(*args: str, cwd: Path | None = None, input: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    return run_swarm(args, timeout=60, env=env, cwd=cwd, input=input)


def listed(cwd: Path) -> dict[str, str]:
    result = swarm("agents", "--json", "--cwd", str(cwd))
    assert result.returncode == 0, result.stderr
    return {entry["name"]: entry["source"] for entry in json.loads(result.stdout)}


def test_a_headless_run_in_an_untrusted_repo_with_project_configuration_is_refused_in_one_line(
        repo: Path, playbook: Path, config: Path) -> None:
    result = swarm("run", "-p", "hello", "--playbook", str(playbook), "--cwd", str(repo))
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""
    [line] = result.stderr.splitlines()
    assert line.startswith(f"swarm: error: the folder {repo} has project configuration (")
    assert ".claude/agents" in line and f"run `swarm trust {repo}` or pass --trust" in line
    assert not (config / ".claude.json").exists()


def test_trust_on_the_command_line_applies_the_project_for_this_run_and_records_nothing(
        repo: Path, playbook: Path, config: Path) -> None:
    result = swarm("run", "-p", "hello", "--playbook", str(playbook), "--cwd", str(repo), "--trust",
                   "--agent", "helper")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "planted definition in charge"
    assert not (config / ".claude.json").exists()


def test_untrusted_listing_shows_only_user_definitions_and_one_warning_that_says_how_to_trust(
        repo: Path, config: Path) -> None:
    (config / "agents").mkdir()
    (config / "agents" / "mine.md").write_text("---\ndescription: the user's own\n---\nMine.\n")
    result = swarm("agents", "--json", "--cwd", str(repo))
    assert result.returncode == 0, result.stderr
    names = {entry["name"]: entry["source"] for entry in json.loads(result.stdout)}
    assert names.get("mine") == "user" and "helper" not in names
    [line] = result.stderr.splitlines()
    assert line.startswith(f"swarm: warning: the folder {repo} is not trusted: its project configuration (")
    assert f"`swarm trust {repo}`" in line


def test_swarm_trust_records_where_claude_code_does_keeping_every_other_key(repo: Path, config: Path) -> None:
    before = {"numStartups": 7, "oauthAccount": {"emailAddress": "me@example.com"},
              "projects": {"/elsewhere": {"allowedTools": ["Bash(ls)"], "hasTrustDialogAccepted": False},
                           str(repo): {"allowedTools": ["Read"], "hasTrustDialogAccepted": False,
                                       "lastCost": 1.5}}}
    (config / ".claude.json").write_text(json.dumps(before, indent=2))
    (config / ".claude.json").chmod(0o600)

    result = swarm("trust", str(repo / "."))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"trusted {repo} (recorded in {config / '.claude.json'})"
    after = json.loads((config / ".claude.json").read_text())
    expected = json.loads(json.dumps(before))
    expected["projects"][str(repo)]["hasTrustDialogAccepted"] = True
    assert after == expected
    assert (config / ".claude.json").read_text().startswith('{\n  "numStartups"')  # Claude Code's indentation
    assert (config / ".claude.json").stat().st_mode & 0o777 == 0o600
    (repo / "sub").mkdir()
    assert listed(repo / "sub")["helper"] == "project"  # a trusted folder's subfolders are trusted

    listing = swarm("trust", "--list")
    assert listing.returncode == 0 and listing.stdout.splitlines() == [str(repo)]
    removed = swarm("trust", "--remove", str(repo))
    assert removed.returncode == 0, removed.stderr
    assert json.loads((config / ".claude.json").read_text())["projects"][str(repo)]["hasTrustDialogAccepted"] is False
    assert "helper" not in listed(repo)


def test_trust_refuses_a_claude_json_it_cannot_read_and_leaves_it_alone(repo: Path, config: Path) -> None:
    (config / ".claude.json").write_text("{ not json")
    result = swarm("trust", str(repo))
    assert result.returncode != 0
    [line] = result.stderr.splitlines()
    assert str(config / ".claude.json") in line and "fix" in line
    assert (config / ".claude.json").read_text() == "{ not json"
    assert not [p.name for p in config.iterdir() if "corrupt" in p.name]  # not moved aside either


def test_a_linked_worktree_of_a_trusted_repository_is_trusted_and_a_forged_one_is_not(
        repo: Path, tmp_path: Path) -> None:
    assert swarm("trust", str(repo)).returncode == 0
    tree = tmp_path / "elsewhere" / "wt"
    git(repo, "worktree", "add", "-q", str(tree))
    assert listed(tree)["helper"] == "project"
    # a folder whose .git claims to be that worktree is not it: git's own record points back at the real one
    forged = tmp_path / "forged"
    (forged / ".claude" / "agents").mkdir(parents=True)
    (forged / ".claude" / "agents" / "evil.md").write_text(PLANTED)
    (forged / ".git").write_text(f"gitdir: {repo / '.git' / 'worktrees' / 'wt'}\n")
    assert "evil" not in listed(forged)


@pytest.mark.skipif(os.geteuid() != 0, reason="making a directory another user owns needs root")
def test_the_walk_never_reads_a_directory_another_user_owns(tmp_path: Path) -> None:
    # the top conftest's config trusts every tmp dir: only the walk's own rule keeps the planted files out
    shared = tmp_path / "shared"  # think /tmp: another user's directory above ours, outside any repository
    (shared / ".claude" / "agents").mkdir(parents=True)
    (shared / ".claude" / "agents" / "planted.md").write_text(PLANTED)
    (shared / ".claude" / "skills" / "planted").mkdir(parents=True)
    (shared / ".claude" / "skills" / "planted" / "SKILL.md").write_text("---\ndescription: x\n---\nbody\n")
    mine = shared / "mine"
    (mine / ".claude" / "agents").mkdir(parents=True)
    (mine / ".claude" / "agents" / "own.md").write_text("---\ndescription: mine\n---\nMine.\n")
    os.chown(shared, 65534, 65534)
    agents = listed(mine)
    assert agents.get("own") == "project" and "planted" not in agents
    skills = swarm("skills", "--json", "--cwd", str(mine))
    assert skills.returncode == 0 and "planted" not in skills.stdout


@pytest.fixture
def team(home: Home) -> Iterator[Home]:
    assert swarm("team", "create", "t").returncode == 0
    yield home
    for member in TeamStore(home).get("t").members[1:]:
        if member.pid and psutil.pid_exists(member.pid):
            kill_tree(member.pid, 1.0)


def test_spawn_in_an_untrusted_repo_is_refused_and_starts_nothing(team: Home, repo: Path, playbook: Path) -> None:
    result = swarm("spawn", "ann", "--team", "t", "-p", "hi", "--backend", "subprocess", "--cwd", str(repo),
                   "--playbook", str(playbook))
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert f"run `swarm trust {repo}` or pass --trust" in line
    assert [m.name for m in TeamStore(team).get("t").members] == ["team-lead"]


def test_a_teammate_spawned_with_trust_applies_the_project_definition(
        team: Home, repo: Path, playbook: Path) -> None:
    result = swarm("spawn", "ann", "--team", "t", "-p", "hi", "--backend", "subprocess", "--cwd", str(repo),
                   "--playbook", str(playbook), "--agent-type", "helper", "--trust")
    assert result.returncode == 0, result.stderr

    def answered() -> list[str]:
        frames = [parse_frame(e.text) for e in Mailbox(team, "t").read("team-lead")]
        return [f.result or "" for f in frames if isinstance(f, IdleNotification)]

    retry_until(lambda: answered() != [], 20, what="ann's first turn")
    assert answered()[0] == "planted definition in charge"
    assert swarm("shutdown", "--all", "--team", "t", "--timeout", "10").returncode == 0


def test_up_in_an_untrusted_folder_is_refused(home: Home, repo: Path, playbook: Path, tmp_path: Path) -> None:
    upfile = tmp_path / "team.toml"
    upfile.write_text(f'[team]\nname = "u"\n\n[[members]]\nname = "ann"\nprompt = "hi"\nplaybook = "{playbook}"\n')
    result = swarm("up", str(upfile), "--headless", "--cwd", str(repo), "--timeout", "20")
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert f"run `swarm trust {repo}` or pass --trust" in line
    assert not TeamStore(home).exists("u")
