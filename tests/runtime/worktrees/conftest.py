"""Real git repositories in tmp dirs, real teammate processes, the scripted model.

Git needs no global configuration here: the repository gets a local
user.name/user.email (worktrees share it) and the playbook's commits pass
``-c user.name=... -c user.email=...`` as well.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from swarm.core.frames import IdleNotification, parse_frame
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.runtime.spawn import Spawned, SpawnRequest, spawn_reporting
from tests.backends.helpers import retry_until
from tests.teammate.conftest import team, tmux_socket  # noqa: F401 - fixtures used by these tests

IDENTITY = ("-c", "user.name=Swarm Test", "-c", "user.email=swarm-test@example.com", "-c", "commit.gpgsign=false")
ORIGINAL = "first line\n"

PLAYBOOK = r"""
[vars]
identity = "-c user.name=Teammate -c user.email=teammate@example.com -c commit.gpgsign=false"

[[rules]]
name = "commit"
match = 'commit (?P<tok>\w+)'
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "echo '{tok} by {agent_name}' >> shared.txt && git {identity} commit -qam '{tok} by {agent_name}'" } }]
[[rules.steps]]
text = "committed {tok}"

[[rules]]
name = "scribble"
match = 'scribble (?P<tok>\w+)'
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "echo '{tok}' > draft-{agent_name}.txt && echo '{tok}' >> shared.txt" } }]
[[rules.steps]]
text = "scribbled {tok}"
"""

STUBBORN = r"""
[[rules]]
name = "stubborn"
match = 'shutdown_request'
tool_calls = [{ name = "Bash", input = { command = "sleep 60" } }]
"""


def git(cwd: Path, *args: str) -> str:
    """stdout of a git command run by the test (its own identity, no global config needed)."""
    result = subprocess.run(["git", *IDENTITY, "-C", str(cwd), *args], capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"git {' '.join(args)}: {result.stderr}"
    return result.stdout.strip()


def branches(repo: Path) -> set[str]:
    return set(git(repo, "branch", "--format=%(refname:short)").split())


def ahead(repo: Path, base: str, branch: str) -> int:
    return int(git(repo, "rev-list", "--count", f"{base}..{branch}"))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one commit of ``shared.txt`` on ``main``."""
    path = tmp_path / "repo"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    for key, value in (("user.name", "Repo Owner"), ("user.email", "owner@example.com"),
                       ("commit.gpgsign", "false")):
        git(path, "config", key, value)
    (path / "shared.txt").write_text(ORIGINAL)
    git(path, "add", "shared.txt")
    git(path, "commit", "-qm", "initial")
    return path


@pytest.fixture
def playbook(tmp_path: Path) -> Path:
    path = tmp_path / "worktree-playbook.toml"
    path.write_text(PLAYBOOK)
    return path


@pytest.fixture
def stubborn_playbook(tmp_path: Path) -> Path:
    path = tmp_path / "stubborn.toml"
    path.write_text(PLAYBOOK + STUBBORN)
    return path


@pytest.fixture
def start(home: Home, team: str, playbook: Path, repo: Path, tmux_socket: str) -> Callable[..., Spawned]:  # noqa: F811
    """Spawn a worktree teammate in ``repo`` (subprocess backend unless told otherwise)."""
    def run(name: str, prompt: str = "hello", *, backend: str = "subprocess", worktree: bool = True,
            **extra: object) -> Spawned:
        options: dict[str, object] = {"cwd": repo, "playbook": playbook, **extra}
        request = SpawnRequest(team=team, name=name, prompt=prompt, backend=backend, worktree=worktree,
                               permission_mode="bypassPermissions", tmux_socket=tmux_socket, **options)
        return spawn_reporting(home, request, dict(os.environ))

    return run


def idle_count(home: Home, team: str, name: str) -> int:
    frames = [parse_frame(e.text) for e in Mailbox(home, team).read("team-lead")]
    return sum(isinstance(f, IdleNotification) and f.sender == name for f in frames)


def wait_turns(home: Home, team: str, name: str, turns: int, timeout: float = 20.0) -> None:
    """Wait until ``name`` has finished ``turns`` turns (one idle notification each)."""
    retry_until(lambda: idle_count(home, team, name) >= turns, timeout, what=f"{name} to finish {turns} turn(s)")


def swarm_texts(home: Home, team: str) -> list[str]:
    """Plain-text messages swarm itself sent the lead."""
    return [e.text for e in Mailbox(home, team).read("team-lead") if e.sender == "swarm"]
