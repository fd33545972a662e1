"""The user's view: spawn --worktree / status / shutdown / worktrees / prune through the executable; tmux; git."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from swarm.backends import git as swarm_git
from swarm.core.home import Home
from swarm.core.teams import TeamStore
from swarm.errors import BackendError
from swarm.runtime.shutdown import shutdown
from swarm.runtime.spawn import Spawned
from tests.forked import run_swarm
from tests.runtime.worktrees.conftest import ORIGINAL, ahead, branches, git, wait_turns
from tests.teammate.conftest import teammate_pids

pytestmark = pytest.mark.usefixtures("served")  # teammates forked from the home's CLI server (tests.zygote)


def swarm(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_swarm(args, timeout=60, cwd=cwd)


def test_cli_round_trip(home: Home, team: str, repo: Path, playbook: Path) -> None:
    (repo / "shared.txt").write_text(ORIGINAL + "local edit\n")
    out = swarm(repo, "spawn", "ann", "--team", team, "--prompt", "commit cli", "--worktree", "--backend",
                "subprocess", "--playbook", str(playbook), "--permission-mode", "bypassPermissions")
    assert out.returncode == 0, out.stderr
    tree = repo / ".swarm" / "worktrees" / team / "ann"
    assert f"worktree {tree} on branch swarm/t/ann" in out.stdout
    assert "warning: the checkout at" in out.stderr and "not in ann's worktree" in out.stderr
    wait_turns(home, team, "ann", 1)

    status = swarm(repo, "status", "--team", team)
    assert "WORKTREE" in status.stdout and "live +1" in status.stdout
    [listed] = json.loads(swarm(repo, "worktrees", "--team", team, "--json").stdout)
    assert (listed["teammate"], listed["state"], listed["ahead"], listed["path"]) == ("ann", "live", 1, str(tree))

    down = swarm(repo, "shutdown", "--all", "--team", team, "--timeout", "10")
    assert down.returncode == 0, down.stderr
    assert f"worktree kept: {tree} on swarm/t/ann (1 commit ahead" in down.stdout
    status = swarm(repo, "status", "--team", team)
    assert "changed +1" in status.stdout and f"ann: changed worktree {tree}" in status.stdout
    table = swarm(repo, "worktrees").stdout.splitlines()
    assert table[0].split() == ["TEAM", "TEAMMATE", "STATE", "BRANCH", "AHEAD", "UNCOMMITTED", "PATH"]
    assert table[1].split() == [team, "ann", "changed", "swarm/t/ann", "1", "0", str(tree)]
    pruned = swarm(repo, "worktrees", "prune", "--team", team)
    assert pruned.returncode == 0 and pruned.stdout.startswith("kept t/ann") and "1 unmerged commit" in pruned.stdout
    assert tree.is_dir() and (repo / "shared.txt").read_text() == ORIGINAL + "local edit\n"


def test_cli_spawn_outside_a_repository_is_one_line_and_leaves_nothing(home: Home, team: str, tmp_path: Path,
                                                                       playbook: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    out = swarm(plain, "spawn", "lost", "--team", team, "--prompt", "hello", "--worktree", "--backend", "subprocess",
                "--playbook", str(playbook))
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "not inside a git repository" in out.stderr
    assert [m.name for m in TeamStore(home).get(team).members] == ["team-lead"]
    assert swarm(plain, "worktrees").stdout.strip() == "no swarm worktrees"


def test_tmux_teammate_runs_in_its_worktree(home: Home, team: str, repo: Path, tmux_socket: str,
                                            start: Callable[..., Spawned]) -> None:
    member = start("tim", "commit pane", backend="tmux").member
    assert member.backend_type == "tmux" and member.worktree_path
    wait_turns(home, team, "tim", 1)
    pane_path = subprocess.run(["tmux", "-L", tmux_socket, "display-message", "-p", "-t", member.tmux_pane_id,
                                "#{pane_current_path}"], capture_output=True, text=True, check=True).stdout.strip()
    assert Path(pane_path).resolve() == Path(member.worktree_path).resolve()
    assert ahead(repo, member.worktree_base or "", "swarm/t/tim") == 1
    [outcome] = shutdown(home, team, None, dict(os.environ), timeout=15)
    assert outcome.result == "approved" and outcome.worktree is not None and outcome.worktree.state == "changed"
    assert teammate_pids(home) == [] and "swarm/t/tim" in branches(repo)


def test_git_retries_while_another_git_holds_the_index_lock(repo: Path) -> None:
    lock = repo / ".git" / "index.lock"
    lock.write_text("")
    (repo / "shared.txt").write_text(ORIGINAL + "more\n")
    releaser = threading.Timer(0.3, lock.unlink)
    releaser.start()
    try:
        swarm_git.git(repo, "add", "shared.txt")  # git alone fails at once: "index.lock': File exists"
    finally:
        releaser.join()
    assert git(repo, "diff", "--cached", "--name-only") == "shared.txt"


def test_missing_git_binary_is_one_line(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(BackendError, match="^git is not installed or not on PATH; install git"):
        swarm_git.repo_root(repo)
