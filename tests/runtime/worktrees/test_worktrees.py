"""Worktree teammates end to end: parallel spawns, shutdown, kill -9 and prune, failures."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from swarm.backends.procs import is_pid_alive
from swarm.core.frames import TeammateTerminated, parse_frame
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.teams import TeamStore
from swarm.errors import ConflictError, UsageError
from swarm.runtime.shutdown import shutdown
from swarm.runtime.spawn import Spawned
from swarm.runtime.status import team_status
from swarm.runtime.worktrees import create, list_worktrees, prune
from tests.backends.helpers import retry_until
from tests.teammate.conftest import teammate_pids
from tests.runtime.worktrees.conftest import (
    ORIGINAL,
    ahead,
    branches,
    git,
    swarm_texts,
    wait_turns,
)


def test_four_parallel_teammates_commit_the_same_file_on_their_own_branches(
        home: Home, team: str, repo: Path, start: Callable[..., Spawned]) -> None:
    head = git(repo, "rev-parse", "HEAD")
    names = ["w1", "w2", "w3", "w4"]
    with ThreadPoolExecutor(len(names)) as pool:
        spawned = list(pool.map(lambda n: start(n, f"commit tok{n}"), names))
    for name, result in zip(names, spawned):
        member = result.member
        assert member.worktree_path == str(repo / ".swarm" / "worktrees" / team / name)
        assert member.cwd == member.worktree_path and member.worktree_branch == f"swarm/{team}/{name}"
        assert member.worktree_base == head and result.warnings == []
    for name in names:
        retry_until(lambda: f"swarm/{team}/{name}" in branches(repo) and ahead(repo, head, f"swarm/{team}/{name}") == 1,
                    20, what=f"{name} to commit")
    for name in names:
        assert git(repo, "show", f"swarm/{team}/{name}:shared.txt") == f"{ORIGINAL}tok{name} by {name}"
    # the main checkout is untouched: same HEAD, same file, nothing to commit (.swarm/ is excluded, once)
    assert git(repo, "rev-parse", "HEAD") == head and git(repo, "branch", "--show-current") == "main"
    assert (repo / "shared.txt").read_text() == ORIGINAL
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    exclude = (repo / ".git" / "info" / "exclude").read_text().splitlines()
    assert exclude.count(".swarm/") == 1
    assert len(teammate_pids(home)) == 4


def test_shutdown_removes_unchanged_worktrees_and_reports_changed_ones(
        home: Home, team: str, repo: Path, start: Callable[..., Spawned]) -> None:
    idle = start("idle", "hello").member
    busy = start("busy", "commit one").member
    drafty = start("drafty", "scribble notes").member
    wait_turns(home, team, "busy", 1)
    Mailbox(home, team).send("busy", "commit two", sender="team-lead")
    wait_turns(home, team, "busy", 2)
    wait_turns(home, team, "drafty", 1)
    wait_turns(home, team, "idle", 1)

    outcomes = {o.name: o for o in shutdown(home, team, None, dict(os.environ), timeout=15)}
    assert {n: o.result for n, o in outcomes.items()} == {"idle": "approved", "busy": "approved", "drafty": "approved"}
    # unchanged: worktree and branch gone
    assert outcomes["idle"].worktree is not None and outcomes["idle"].worktree.state == "removed"
    assert not Path(idle.worktree_path or "").exists() and f"swarm/{team}/idle" not in branches(repo)
    # committed work: kept, with the right count, and the lead is told path, branch, count and diffstat
    kept = outcomes["busy"].worktree
    assert kept is not None and (kept.state, kept.ahead, kept.uncommitted) == ("changed", 2, 0)
    assert Path(busy.worktree_path or "").is_dir() and ahead(repo, busy.worktree_base or "", "swarm/t/busy") == 2
    [told] = [t for t in swarm_texts(home, team) if "busy" in t]
    assert busy.worktree_path in told and "swarm/t/busy" in told and "2 commits ahead" in told
    assert "shared.txt | 2 ++" in told
    # uncommitted work only: still "changed", kept
    draft = outcomes["drafty"].worktree
    assert draft is not None and (draft.state, draft.ahead, draft.uncommitted) == ("changed", 0, 2)
    assert (Path(drafty.worktree_path or "") / "draft-drafty.txt").read_text() == "notes\n"
    rows = {r.name: r for r in team_status(home, team)}
    assert (rows["busy"].worktree_state, rows["busy"].worktree_ahead) == ("changed", 2)
    assert rows["idle"].worktree_state == "removed" and rows["drafty"].worktree_state == "changed"
    assert (repo / "shared.txt").read_text() == ORIGINAL


def test_forced_shutdown_settles_the_worktree_too(home: Home, team: str, repo: Path, stubborn_playbook: Path,
                                                  start: Callable[..., Spawned]) -> None:
    mule = start("mule", "commit hay", playbook=stubborn_playbook).member
    wait_turns(home, team, "mule", 1)
    [outcome] = shutdown(home, team, ["mule"], dict(os.environ), timeout=1.0)
    assert outcome.result == "killed"
    assert outcome.worktree is not None and (outcome.worktree.state, outcome.worktree.ahead) == ("changed", 1)
    assert Path(mule.worktree_path or "").is_dir()
    assert any("mule's worktree was kept" in t and "1 commit ahead" in t for t in swarm_texts(home, team))


def test_kill_dash_nine_leaves_orphans_that_prune_sorts_out(home: Home, team: str, repo: Path,
                                                          start: Callable[..., Spawned]) -> None:
    clean = start("clean", "hello").member
    worked = start("worked", "commit stuff").member
    wait_turns(home, team, "clean", 1)
    wait_turns(home, team, "worked", 1)
    for member in (clean, worked):
        assert member.pid is not None
        os.kill(member.pid, signal.SIGKILL)
        retry_until(lambda: not is_pid_alive(member.pid or 0), 10, what=f"{member.name} gone")

    trees = {t.teammate: t for t in list_worktrees(home, team)}
    assert {n: (t.state, t.ahead) for n, t in trees.items()} == {"clean": ("orphaned", 0), "worked": ("orphaned", 1)}
    notices = [f.message for f in map(parse_frame, (e.text for e in Mailbox(home, team).read("team-lead")))
               if isinstance(f, TeammateTerminated)]
    assert any("worked died" in n and str(worked.worktree_path) in n for n in notices)

    results = {r.worktree.teammate: r for r in prune(home, team)}
    assert results["clean"].removed and not Path(clean.worktree_path or "").exists()
    assert "swarm/t/clean" not in branches(repo)
    assert not results["worked"].removed and "1 unmerged commit" in results["worked"].reason
    assert Path(worked.worktree_path or "").is_dir() and "swarm/t/worked" in branches(repo)

    git(repo, "merge", "-q", "--ff-only", "swarm/t/worked")  # the lead takes the work ...
    [again] = prune(home, team)
    assert again.removed and again.reason == "merged"  # ... so nothing is lost by pruning now
    assert not Path(worked.worktree_path or "").exists() and "swarm/t/worked" not in branches(repo)


def test_uncommitted_edits_survive_prune_without_force(home: Home, team: str, repo: Path,
                                                       start: Callable[..., Spawned]) -> None:
    member = start("drafter", "scribble precious").member
    wait_turns(home, team, "drafter", 1)
    assert member.pid is not None
    os.kill(member.pid, signal.SIGKILL)
    retry_until(lambda: not is_pid_alive(member.pid or 0), 10, what="drafter gone")
    draft = Path(member.worktree_path or "") / "draft-drafter.txt"

    [kept] = prune(home, team)
    assert not kept.removed and kept.worktree.state == "orphaned" and kept.worktree.uncommitted == 2
    assert draft.read_text() == "precious\n"
    assert (draft.parent / "shared.txt").read_text() == ORIGINAL + "precious\n"

    [forced] = prune(home, team, force=True)
    assert forced.removed and "2 uncommitted paths discarded" in forced.reason
    assert not draft.parent.exists() and "swarm/t/drafter" not in branches(repo)


def test_spawn_outside_a_repository_fails_cleanly(home: Home, team: str, tmp_path: Path,
                                                  start: Callable[..., Spawned]) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(UsageError, match="not inside a git repository"):
        start("lost", "hello", cwd=plain)
    assert [m.name for m in TeamStore(home).get(team).members] == ["team-lead"]
    assert not home.inbox_path(team, "lost").exists()
    assert teammate_pids(home) == []
    assert list(plain.iterdir()) == []


def test_a_failed_spawn_removes_its_worktree_and_branch(home: Home, team: str, repo: Path,
                                                        start: Callable[..., Spawned]) -> None:
    with pytest.raises(UsageError, match="--base 'nope'"):
        start("early", "hello", base="nope")
    first = start("solo", "hello").member
    with pytest.raises(ConflictError, match="solo"):  # the name is live: the second worktree is undone
        start("solo", "hello again")
    assert branches(repo) == {"main", "swarm/t/solo"}
    assert sorted(p.name for p in (repo / ".swarm" / "worktrees" / team).iterdir()) == ["solo"]
    solo = TeamStore(home).get(team).member("solo")
    assert solo is not None and solo.is_active and solo.worktree_path == first.worktree_path
    assert len(teammate_pids(home)) == 1


def test_taken_branch_gets_a_suffix_and_a_dirty_checkout_a_warning(home: Home, team: str, repo: Path,
                                                                   start: Callable[..., Spawned]) -> None:
    git(repo, "branch", "swarm/t/ann")
    (repo / "shared.txt").write_text(ORIGINAL + "not committed\n")
    result = start("ann", "hello")
    assert result.member.worktree_branch == "swarm/t/ann-2"
    assert result.member.worktree_path == str(repo / ".swarm" / "worktrees" / "t" / "ann-2")
    assert any("swarm/t/ann is taken" in w for w in result.warnings)
    assert any("1 uncommitted path" in w and "not in ann's worktree" in w for w in result.warnings)
    assert (Path(result.member.worktree_path) / "shared.txt").read_text() == ORIGINAL
    assert (repo / "shared.txt").read_text() == ORIGINAL + "not committed\n"


def test_worktrees_outlive_their_team_and_fresh_ones_are_left_to_their_spawn(
        home: Home, team: str, repo: Path, start: Callable[..., Spawned]) -> None:
    member = start("keeper", "commit kept").member
    wait_turns(home, team, "keeper", 1)
    shutdown(home, team, None, dict(os.environ), timeout=15)
    TeamStore(home).delete(team)
    [found] = list_worktrees(home, None, cwd=repo)  # no member entry left: found through the repository
    assert (found.teammate, found.state, found.has_member, found.ahead) == ("keeper", "orphaned", False, 1)
    assert found.path == member.worktree_path

    fresh = create(repo, team, "newcomer")  # as a spawn does, just before it writes the member entry
    results = {r.worktree.teammate: r for r in prune(home, team, cwd=repo)}
    assert not results["newcomer"].removed and "spawn in progress" in results["newcomer"].reason
    assert fresh.path.is_dir() and not results["keeper"].removed
    TeamStore(home).create(team)  # the fixture's teardown reads the team
