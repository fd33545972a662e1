"""A subagent's own git worktree: made from HEAD, removed when untouched, kept when changed.

The Agent tool's ``isolation: "worktree"`` runs the child inside
``isolated_worktree``; what happened to the worktree is in the
``IsolatedTree`` afterwards, for the tool result::

    with isolated_worktree(parent_cwd, label) as tree:
        ...run the child with cwd=tree.path...
    tree.kept, tree.summary   # e.g. True, "kept worktree /r/.swarm/agent-worktrees/ab12 on branch ..."

The worktree is ``<repo>/.swarm/agent-worktrees/<label>`` on branch
``swarm/agent/<label>`` (``-2``, ``-3`` ... when taken), started from the
HEAD of the checkout ``cwd`` is in (uncommitted edits there are not
copied). Its own directory, apart from teammates'
``.swarm/worktrees/<team>/<name>``, keeps ``swarm worktrees prune`` away
from a subagent that is still running.

On exit — normal or by an exception — a worktree without commits beyond
its base and without anything ``git status`` lists is removed with its
branch; any other is kept, and ``summary`` says where and what it holds.
Cleanup never raises: a worktree that cannot be measured or removed is
kept and the summary says why, so the child's own outcome (or exception)
is what the caller sees. The git work itself is ``swarm.backends.worktree``.

A fork child in a worktree inherits a conversation full of its parent's
paths; ``worktree_notice`` (seed 002 §9.4) tells it where it is instead.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from swarm.backends import worktree as git_worktree
from swarm.core.names import validate_name
from swarm.errors import SwarmError, UsageError
from swarm.models.messages import Message, TextBlock

log = logging.getLogger(__name__)

AGENT_WORKTREES_DIR = git_worktree.SWARM_DIR / "agent-worktrees"
BRANCH_PREFIX = "swarm/agent"


@dataclass
class IsolatedTree:
    """A subagent's worktree; ``kept`` and ``summary`` are filled in on exit."""

    path: Path
    branch: str
    base: str
    """Full sha of the commit the worktree started from."""
    repo: Path
    """The repository's main working tree."""
    kept: bool = False
    """True when the worktree held changes (commits or uncommitted edits), or could not be removed."""
    summary: str = ""
    """E.g. ``kept worktree /x on branch swarm/agent/ab12: 1 commit ahead, 1 file changed, ...`` or
    ``removed (no changes)``; empty while the worktree is in use."""

    def notice(self, messages: list[Message], parent_cwd: Path) -> list[Message]:
        """A fork's first messages with ``worktree_notice`` after its directive (the inherited prefix unchanged)."""
        last = messages[-1]
        added = TextBlock(text=worktree_notice(parent_cwd, self.path))
        return [*messages[:-1], last.model_copy(update={"content": [*last.content, added]})]


@contextmanager
def isolated_worktree(cwd: Path, label: str) -> Iterator[IsolatedTree]:
    """A fresh worktree of the HEAD of the repository ``cwd`` is in, settled on exit (see module docstring).

    ``label`` (1-64 of ``A-Za-z0-9_-``, e.g. the agent id) names the
    directory and branch. UsageError, before anything is created, when the
    label is bad or ``cwd`` is not in a git repository with a commit.
    """
    validate_name(label, "worktree label")
    try:
        added = git_worktree.create(cwd, AGENT_WORKTREES_DIR, BRANCH_PREFIX, label)
    except UsageError as exc:
        raise UsageError(f"cannot run the agent in its own worktree: {exc}") from exc
    tree = IsolatedTree(path=added.path, branch=added.branch, base=added.base, repo=added.repo)
    log.info("created agent worktree", extra={"label": label, "path": str(tree.path), "branch": tree.branch})
    try:
        yield tree
    finally:
        _finish(tree)


def _finish(tree: IsolatedTree) -> None:
    """Remove an unchanged worktree with its branch; keep a changed one. Never raises."""
    try:
        changes = git_worktree.changes(tree.path, tree.base)
        if not changes.changed:
            git_worktree.remove(tree.repo, tree.path, tree.branch, tree.base)
            tree.kept, tree.summary = False, "removed (no changes)"
            log.info("removed agent worktree", extra={"path": str(tree.path), "branch": tree.branch})
            return
        tree.kept, tree.summary = True, f"kept worktree {tree.path} on branch {tree.branch}: {changes.summary()}"
    except SwarmError as exc:  # the child's outcome matters more; a worktree left in place loses nothing
        tree.kept, tree.summary = True, f"kept worktree {tree.path} on branch {tree.branch} (could not check it: {exc})"
    log.info("kept agent worktree", extra={"path": str(tree.path), "branch": tree.branch, "summary": tree.summary})


def worktree_notice(parent_cwd: Path, worktree: Path) -> str:
    """What a fork child in its own worktree is told after its inherited context: the paths there are its
    parent's, and files may have changed since."""
    return (f"You've inherited the conversation context above from a parent agent working in {parent_cwd}. "
            f"You are operating in an isolated git worktree at {worktree}: the same repository, the same relative "
            "file structure, a separate working copy. Paths in the inherited context refer to the parent's working "
            "directory; translate them to your worktree root. Re-read files before editing them if the parent may "
            "have modified them since they appear in the context.")
