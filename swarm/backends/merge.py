"""git for a merge queue: try a merge in a scratch worktree, then move the target branch only if it is good.

The target branch is never merged into in place. A trial runs in a scratch
worktree detached at the target's tip (``scratch``, under the repository's
``.swarm/merge/``, removed afterwards whatever happened); a conflict is
listed and aborted there. Only a merge that the caller accepts (its tests
passed) moves the branch (``advance``): a fast-forward in the worktree that
has it checked out (its files follow, local changes are kept or git
refuses), else a compare-and-swap of the ref. So a conflict, a failing test
or an interruption leaves the target exactly as it was.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from swarm.backends import git
from swarm.backends.worktree import exclude_swarm_dir, registered
from swarm.core.flock import LockTimeout, locked
from swarm.errors import BackendError, LockTimeoutError

QUEUE_LOCK_S = 5.0
"""Seconds a merge queue waits for another one running in the same repository."""


@dataclass(frozen=True)
class Trial:
    outcome: Literal["merged", "up_to_date", "conflict"]
    sha: str | None = None
    """The merge commit (``merged``), in the scratch worktree."""
    conflicts: list[str] = field(default_factory=list)
    """Paths git could not merge (``conflict``)."""


@contextmanager
def one_queue(repo: Path) -> Iterator[None]:
    """Hold the repository's merge-queue lock (one queue at a time per repository)."""
    path = git.common_dir(repo) / "swarm-merge.lock"
    try:
        with locked(path, QUEUE_LOCK_S):
            yield
    except LockTimeout as exc:
        raise LockTimeoutError(f"another `swarm merge` runs in {repo}; wait for it and try again") from exc


@contextmanager
def scratch(repo: Path, start: str) -> Iterator[Path]:
    """A worktree detached at ``start``, removed when the ``with`` ends."""
    exclude_swarm_dir(repo)
    path = repo / ".swarm" / "merge" / uuid.uuid4().hex[:12]
    git.git(repo, "worktree", "add", "--detach", str(path), start)
    try:
        yield path
    finally:
        git.succeeds(repo, "worktree", "remove", "--force", str(path))
        git.succeeds(repo, "worktree", "prune")


def try_merge(tree: Path, branch: str, message: str) -> Trial:
    """Merge ``branch`` into the scratch worktree's HEAD (always a merge commit); a conflict is aborted."""
    if git.succeeds(tree, "merge-base", "--is-ancestor", f"refs/heads/{branch}", "HEAD"):
        return Trial("up_to_date")
    if git.succeeds(tree, "merge", "--no-ff", "--no-edit", "-m", message, f"refs/heads/{branch}"):
        return Trial("merged", git.git(tree, "rev-parse", "HEAD").strip())
    conflicts = [p for p in git.git(tree, "diff", "--name-only", "--diff-filter=U").splitlines() if p]
    git.succeeds(tree, "merge", "--abort")
    if not conflicts:
        raise BackendError(f"git merge of {branch} failed in {tree} without a conflict; merge it by hand")
    return Trial("conflict", conflicts=conflicts)


def has_branch(repo: Path, branch: str) -> bool:
    return git.branch_exists(repo, branch)


def tip(repo: Path, branch: str) -> str:
    return git.git(repo, "rev-parse", "--verify", f"refs/heads/{branch}^{{commit}}").strip()


def current_branch(repo: Path) -> str | None:
    """The branch checked out in ``repo``'s working tree (None: detached)."""
    name = git.git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip()
    return None if name == "HEAD" else name


def advance(repo: Path, branch: str, old: str, new: str) -> None:
    """Move ``branch`` from ``old`` to ``new`` (a descendant): BackendError, and no move, if it moved meanwhile."""
    holder = next((path for path, name in registered(repo) if name == branch), None)
    if holder is None:
        git.git(repo, "update-ref", "-m", "swarm merge", f"refs/heads/{branch}", new, old)
        return
    if tip(repo, branch) != old:
        raise BackendError(f"{branch} moved while the queue ran; run `swarm merge` again")
    git.git(holder, "merge", "--ff-only", "--quiet", new)
