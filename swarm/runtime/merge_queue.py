"""The merge queue: teammates' branches into the person's branch, one at a time, tested after each.

``swarm merge [NAMES…] [--into BRANCH] [--test CMD]`` (and the same for the
lead model). The branches are those of the team's worktree teammates
(``NAMES``, or every one that has a branch), in the dependency order of
their tasks: a teammate whose task another teammate's task is blocked by
goes first (``queue_order``; otherwise the order they joined). Each merge is
tried in a scratch worktree (``swarm.backends.merge``) and the test command
runs there; only a clean merge whose tests pass moves the target branch.
The first conflict or failing test stops the queue with the target as it
was before that merge, and the teammate, if it still runs, is sent what
went wrong to fix on its branch; with ``wait`` the queue waits for the fix
(a new commit on the branch, the teammate idle) and tries again, else
running it again retries from there (merged branches are then up to date).
"""

from __future__ import annotations

import logging
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from swarm.backends import merge as git_merge
from swarm.backends.git import repo_root
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.names import LEAD_NAME, RUNTIME_NAME
from swarm.core.protocol import Member, Task
from swarm.core.tasks import TaskStore
from swarm.core.teams import TeamStore
from swarm.core.text import flat
from swarm.errors import UsageError
from swarm.runtime.member_kinds import Machine, member_kind

log = logging.getLogger(__name__)

TEST_TIMEOUT = 1800.0
"""Seconds the test command may run after one merge."""
FIX_POLL = 0.5
"""Seconds between looks at a teammate's branch while the queue waits for its fix."""
OUTPUT_TAIL = 2000
"""Characters of a failing test's output kept (the end, where the failure usually is)."""

Result = Literal["merged", "up_to_date", "conflict", "test_failed", "not_reached"]


@dataclass
class Step:
    name: str
    branch: str
    result: Result = "not_reached"
    sha: str | None = None
    detail: str = ""
    told: bool = False
    """The teammate was sent the conflict or failure to fix."""
    tried: str = ""
    """The branch's tip when it was last tried."""
    retries: int = 0
    """Tries after the teammate fixed its branch (``wait``)."""


@dataclass
class QueueRun:
    into: str
    before: str
    """The target's tip before the queue ran."""
    steps: list[Step] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(s.result in ("merged", "up_to_date") for s in self.steps)


def queue_order(members: list[Member], tasks: list[Task]) -> list[Member]:
    """``members`` in the dependency order of their tasks (stable: join order among equals; a cycle keeps it)."""
    owner = {t.id: t.owner for t in tasks if t.owner}
    names = [m.name for m in members]
    before: dict[str, set[str]] = {n: set() for n in names}
    for task in tasks:
        for blocker in task.blocked_by:
            first, then = owner.get(blocker), task.owner
            if first in before and then in before and first != then:
                before[then].add(first)  # type: ignore[index]
    ordered: list[str] = []
    while len(ordered) < len(names):
        ready = [n for n in names if n not in ordered and before[n] <= set(ordered)]
        if not ready:  # a cycle: the rest in join order
            ordered += [n for n in names if n not in ordered]
            break
        ordered.append(ready[0])
    by_name = {m.name: m for m in members}
    return [by_name[n] for n in ordered]


def run_queue(home: Home, team: str, names: list[str], *, into: str | None, test: str | None,
              cwd: Path, wait: float = 0.0) -> QueueRun:
    """Merge the teammates' branches (see the module docstring); UsageError for a name without a branch.

    ``wait``: seconds to wait, after the queue stopped at a teammate it told, for that teammate to fix its
    branch (a new commit on it, and the teammate idle), then go on from there; 0: stop at once.
    """
    members = queue_order(_queued(home, team, names), TaskStore(home, team).list())
    repo = Path(members[0].worktree_repo or cwd) if members else repo_root(cwd)
    target = into or git_merge.current_branch(repo)
    if target is None:
        raise UsageError(f"{repo} has no branch checked out; say which branch to merge into with --into")
    if not git_merge.has_branch(repo, target):
        raise UsageError(f"--into {target!r}: no such branch in {repo}")
    deadline = time.monotonic() + wait
    with git_merge.one_queue(repo):
        run = QueueRun(into=target, before=git_merge.tip(repo, target),
                       steps=[Step(m.name, m.worktree_branch or "") for m in members])
        for step, member in zip(run.steps, members, strict=True):
            _one(home, team, repo, target, step, member, test)
            while step.told and step.result in ("conflict", "test_failed") and _fixed(home, team, repo, step,
                                                                                         deadline):
                step.retries += 1
                _one(home, team, repo, target, step, member, test)
            if step.result in ("conflict", "test_failed"):
                break
    return run


def _fixed(home: Home, team: str, repo: Path, step: Step, deadline: float) -> bool:
    """Wait until the teammate committed on its branch since the failed try and is idle (or gone); False at the
    deadline."""
    tried = step.tried
    while time.monotonic() < deadline:
        member = TeamStore(home).get(team).member(step.name)
        if git_merge.tip(repo, step.branch) != tried and (member is None or member.status != "busy"):
            return True
        time.sleep(FIX_POLL)
    return False


def _queued(home: Home, team: str, names: list[str]) -> list[Member]:
    members = [m for m in TeamStore(home).get(team).members if m.name != LEAD_NAME]
    with_branch = [m for m in members if m.worktree_branch and m.worktree_repo]
    if not names:
        return with_branch
    by_name = {m.name: m for m in members}
    for name in names:
        if name not in by_name:
            raise UsageError(f"no teammate {name!r} in team {team!r}; `swarm status --team {team}` lists them")
        if not by_name[name].worktree_branch:
            raise UsageError(f"{name} has no branch of its own (it was not started with a worktree); nothing to merge")
    return [m for m in with_branch if m.name in names]


def _one(home: Home, team: str, repo: Path, target: str, step: Step, member: Member, test: str | None) -> None:
    old, step.tried, step.told, step.detail = git_merge.tip(repo, target), git_merge.tip(repo, step.branch), False, ""
    with git_merge.scratch(repo, old) as tree:
        trial = git_merge.try_merge(tree, step.branch, f"Merge {step.branch} ({member.name}) into {target}")
        if trial.outcome == "up_to_date":
            step.result = "up_to_date"
            return
        if trial.outcome == "conflict":
            step.result, step.detail = "conflict", ", ".join(trial.conflicts)
            step.told = _tell(home, team, member, f"Merging your branch {step.branch} into {target} conflicts in "
                              f"{step.detail}. Merge {target} into your branch, resolve the conflicts, commit, and "
                              f"tell {LEAD_NAME} it is ready to merge again.")
            return
        if test is not None:
            passed, output = _test(tree, test)
            if not passed:
                step.result, step.detail = "test_failed", output
                step.told = _tell(home, team, member, f"After merging your branch {step.branch} into {target}, "
                                  f"the test command `{test}` failed:\n{output}\nFix it on your branch, commit, and "
                                  f"tell {LEAD_NAME} it is ready to merge again.")
                return
        git_merge.advance(repo, target, old, trial.sha or "")
        step.result, step.sha = "merged", trial.sha


def _test(tree: Path, command: str) -> tuple[bool, str]:
    try:
        done = subprocess.run(["bash", "-c", command], cwd=tree, capture_output=True, text=True,
                              timeout=TEST_TIMEOUT, stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        return False, f"(did not finish within {TEST_TIMEOUT:g} s)"
    output = (done.stdout + done.stderr).strip()
    return done.returncode == 0, f"exit {done.returncode}: {output[-OUTPUT_TAIL:]}"


def _tell(home: Home, team: str, member: Member, text: str) -> bool:
    """Send ``text`` to the teammate if it still runs; whether it was sent."""
    if not member_kind(member, Machine({}, home)).running():
        return False
    log.info("merge queue sent a teammate its problem", extra={"team": team, "agent": member.name})
    Mailbox(home, team).send(member.name, text, sender=RUNTIME_NAME, summary=flat("merge: " + text[:60]))
    return True
