"""The merge queue with real git repositories and real worktree teammates (scripted model)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from swarm.agent.permissions.policy import CallFacts, RuleSet, decide
from swarm.agent.permissions.rules import parse_rules
from swarm.agent.tools.team_tools import team_tools
from swarm.core.home import Home
from swarm.core.tasks import TaskStore
from swarm.runtime.lead import LeadTeam
from swarm.runtime.merge_queue import run_queue
from swarm.runtime.spawn import Spawned
from tests.backends.helpers import retry_until
from tests.forked import run_swarm
from tests.runtime.worktrees.conftest import PLAYBOOK, git, wait_turns

RESOLVER = PLAYBOOK + r"""
[[rules]]
name = "resolve"
match = 'Merge (?P<target>\S+) into your branch'
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "git {identity} merge -q --no-edit -X ours {target}" } }]
[[rules.steps]]
text = "merged {target} and resolved"
"""


@pytest.fixture
def resolver(tmp_path: Path) -> Path:
    path = tmp_path / "resolver.toml"
    path.write_text(RESOLVER)
    return path


def _commit_file(tree: Path, name: str, text: str) -> None:
    (tree / name).write_text(text)
    git(tree, "add", name)
    git(tree, "commit", "-qm", f"add {name}")


def test_clean_merges_in_the_order_of_the_tasks(home: Home, team: str, repo: Path,
                                                 start: Callable[..., Spawned]) -> None:
    alice, bob = start("alice").member, start("bob").member
    tasks = TaskStore(home, team)
    first = tasks.create("schema", owner="bob")
    tasks.create("api on the schema", owner="alice", blocked_by=[first.id])
    _commit_file(Path(alice.worktree_path or ""), "api.txt", "api\n")
    _commit_file(Path(bob.worktree_path or ""), "schema.txt", "schema\n")
    before = git(repo, "rev-parse", "main")

    done = run_swarm(["merge", "--team", team, "--test", "test -f schema.txt", "--json"], cwd=repo, timeout=60)
    run = json.loads(done.stdout)
    assert done.returncode == 0 and run["ok"], done.stderr
    assert [(s["name"], s["result"]) for s in run["steps"]] == [("bob", "merged"), ("alice", "merged")]
    subjects = git(repo, "log", "--first-parent", "--format=%s", f"{before}..main").splitlines()
    assert subjects == ["Merge swarm/t/alice (alice) into main", "Merge swarm/t/bob (bob) into main"]
    assert (repo / "api.txt").read_text() == "api\n" and (repo / "schema.txt").exists()  # main's files followed
    assert git(repo, "status", "--porcelain") == ""
    assert not (repo / ".swarm" / "merge").exists() or not any((repo / ".swarm" / "merge").iterdir())


def test_a_conflict_stops_the_queue_goes_back_to_the_teammate_and_merges_once_resolved(
        home: Home, team: str, repo: Path, start: Callable[..., Spawned], resolver: Path) -> None:
    start("alice", "commit one")
    start("bob", "commit two", playbook=resolver)
    wait_turns(home, team, "alice", 1)
    wait_turns(home, team, "bob", 1)  # both appended to shared.txt: the second merge conflicts

    run = run_queue(home, team, [], into=None, test=None, cwd=repo)
    assert [(s.name, s.result) for s in run.steps] == [("alice", "merged"), ("bob", "conflict")]
    assert run.steps[1].detail == "shared.txt" and run.steps[1].told
    after_alice = run.steps[0].sha
    assert git(repo, "rev-parse", "main") == after_alice  # the conflicting merge left main as it was
    assert git(repo, "status", "--porcelain") == ""

    wait_turns(home, team, "bob", 2)  # bob got the conflict and merged main into its branch
    again = run_queue(home, team, [], into=None, test=None, cwd=repo)
    assert [(s.name, s.result) for s in again.steps] == [("alice", "up_to_date"), ("bob", "merged")]
    assert "two by bob" in (repo / "shared.txt").read_text()  # bob's resolution, now on main


def test_a_failing_test_leaves_the_target_untouched_and_tells_the_teammate(
        home: Home, team: str, repo: Path, start: Callable[..., Spawned]) -> None:
    alice, bob = start("alice").member, start("bob").member
    _commit_file(Path(alice.worktree_path or ""), "good.txt", "fine\n")
    _commit_file(Path(bob.worktree_path or ""), "broken", "this breaks the build\n")
    git(repo, "checkout", "-q", "-b", "release")  # the target is not the checked-out branch: moved by ref
    git(repo, "checkout", "-q", "main")
    release_before = git(repo, "rev-parse", "release")

    run = run_queue(home, team, [], into="release", test="test ! -e broken && echo ok", cwd=repo)
    assert [(s.name, s.result) for s in run.steps] == [("alice", "merged"), ("bob", "test_failed")]
    assert git(repo, "rev-parse", "release") == run.steps[0].sha != release_before
    assert not git(repo, "ls-tree", "-r", "--name-only", "release").count("broken")
    assert git(repo, "rev-parse", "main") != run.steps[0].sha  # only --into moved
    assert "exit 1" in run.steps[1].detail and run.steps[1].told
    transcript = home.transcript_path(team, "bob")
    retry_until(lambda: transcript.exists() and "the test command `test ! -e broken" in transcript.read_text(), 20,
                what="bob to receive the failure")


def test_the_lead_model_merges_through_a_tool_that_is_asked_for_like_a_git_write(
        home: Home, team: str, repo: Path, start: Callable[..., Spawned]) -> None:
    mergers = [t for t in team_tools(LeadTeam(home, dict(os.environ), repo)) if t.name == "MergeQueue"]
    assert len(mergers) == 1 and not mergers[0].read_only
    facts = CallFacts("MergeQueue", {}, read_only=False, cwd=repo)
    assert decide(facts, "default", RuleSet()).verdict == "ask"
    assert decide(facts, "dontAsk", RuleSet()).verdict == "deny"
    assert decide(facts, "default", RuleSet(allow=tuple(parse_rules(["MergeQueue"])))).verdict == "allow"

    alice = start("alice").member
    _commit_file(Path(alice.worktree_path or ""), "feature.txt", "feature\n")
    lead = LeadTeam(home, dict(os.environ), repo, team=team)
    said = lead.merge([], None, "test -f feature.txt")
    assert said.startswith("Merged into main.") and "alice (swarm/t/alice): merged" in said
    assert (repo / "feature.txt").exists()


def test_with_wait_the_queue_takes_the_teammates_fix_and_goes_on(
        home: Home, team: str, repo: Path, start: Callable[..., Spawned], resolver: Path) -> None:
    start("alice", "commit one")
    start("bob", "commit two", playbook=resolver)
    wait_turns(home, team, "alice", 1)
    wait_turns(home, team, "bob", 1)
    done = run_swarm(["merge", "--team", team, "--wait", "30", "--json"], cwd=repo, timeout=60)
    run = json.loads(done.stdout)
    assert done.returncode == 0 and run["ok"], (done.stderr, run)
    alice, bob = run["steps"]
    assert (alice["result"], bob["result"], bob["retries"]) == ("merged", "merged", 1)
    assert "two by bob" in (repo / "shared.txt").read_text()
