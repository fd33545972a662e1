"""Teammate git worktrees: create, inspect, finish at shutdown (removed if unchanged, else kept), list, prune.

The git side (add, measure, remove a worktree; which branch is spare) is
``swarm.backends.worktree``; this module adds what knows teams and members.

A worktree teammate works in ``<repo>/.swarm/worktrees/<team>/<name>`` on
branch ``swarm/<team>/<name>`` (``-2``, ``-3`` ... appended while either is
taken), started from a base commit recorded in its member entry. ``.swarm/``
is kept out of git by a line in ``.git/info/exclude``.

A worktree is *changed* when its HEAD has commits beyond the base or
``git status`` shows anything (untracked files included). States:

    live       its teammate's process runs (or is being spawned)
    orphaned   its teammate died (or its spawn did), or no member entry names it any more
    changed    its teammate stopped; the worktree was kept for review
    unchanged  its teammate stopped and nothing changed (normally already removed)

Shutdown removes an unchanged worktree with its branch and keeps a changed
one, telling the lead. ``prune`` removes worktrees whose teammate is not
running and that hold nothing unique: no uncommitted changes, and no commits
that another branch does not have (so a branch the lead merged is pruned).
Uncommitted work is only discarded by ``prune(force=True)``; a branch with
commits no other branch has is never deleted, not even then.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from swarm.backends import git
from swarm.backends import worktree as git_worktree
from swarm.backends.worktree import Changes, plural
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.names import LEAD_NAME
from swarm.core.protocol import Member
from swarm.core.teams import TeamStore
from swarm.errors import BackendError, SwarmError, UsageError
from swarm.runtime.member_kinds import Machine, member_kind, reap_dead

log = logging.getLogger(__name__)

WORKTREES_DIR = git_worktree.SWARM_DIR / "worktrees"
STARTING_GRACE_S = 15.0
"""A worktree this young without a member entry may belong to a spawn in progress; prune leaves it."""


@dataclass
class NewWorktree:
    """A worktree just created for a teammate."""

    path: Path
    branch: str
    base: str
    repo: Path
    warnings: list[str] = field(default_factory=list)


@dataclass
class Worktree:
    """A teammate worktree as found on disk."""

    team: str
    teammate: str
    path: str
    branch: str
    base: str
    repo: str
    state: str
    """``live``, ``orphaned``, ``changed``, ``unchanged``; ``removed`` once swarm deleted it."""
    ahead: int = 0
    """Commits on the worktree's HEAD beyond the base."""
    unmerged: int = 0
    """Of those, commits no other branch holds (0 once the lead merged them)."""
    uncommitted: int = 0
    """Paths ``git status`` lists (modified, staged, untracked)."""
    diffstat: str = ""
    """``git diff --stat`` of the working tree against the base (untracked files not included)."""
    has_member: bool = True
    """False when no member entry names the worktree any more (team deleted, name respawned)."""
    host: str = ""
    """A teammate on a host (``runtime.hosts.branches``): that host; ``path`` is then empty, ``repo`` the remote."""
    pushed: str = ""
    """On a host: the sha its branch has on the remote ("" while nothing is pushed)."""
    files_changed: int = 0
    """On a host: files its pushed branch changed since the base."""
    error: str = ""
    """On a host: why its branch could not be read from the remote."""

    @property
    def changed(self) -> bool:
        return self.ahead > 0 or self.uncommitted > 0

    @property
    def summary(self) -> str:
        """E.g. ``2 commits ahead (merged), 1 uncommitted path, 1 file changed, 3 insertions(+)``."""
        return Changes(self.ahead, self.uncommitted, self.diffstat).summary(merged=not self.unmerged)


@dataclass
class Pruned:
    worktree: Worktree
    removed: bool
    reason: str


# -- create ------------------------------------------------------------------------


def create(cwd: Path, team: str, name: str, base: str | None = None) -> NewWorktree:
    """``git worktree add -b swarm/<team>/<name> <repo>/.swarm/worktrees/<team>/<name> <base>``.

    ``base`` defaults to the HEAD of the checkout ``cwd`` is in. Uncommitted
    changes there are allowed, with a warning that the worktree lacks them.
    """
    added = git_worktree.create(cwd, WORKTREES_DIR / team, f"swarm/{team}", name, base)
    warnings = _dirty_warning(cwd, name, added.base)
    wanted = f"swarm/{team}/{name}"
    if added.branch != wanted:
        warnings.append(f"branch {wanted} is taken (an earlier worktree?); {name} works on {added.branch} instead")
    log.info("created worktree", extra={"team": team, "agent": name, "path": str(added.path), "branch": added.branch})
    return NewWorktree(path=added.path, branch=added.branch, base=added.base, repo=added.repo, warnings=warnings)


def discard(new: NewWorktree) -> None:
    """Undo ``create`` after a failed spawn: the worktree and its branch go, whatever they hold."""
    try:
        remove(Worktree(team="", teammate="", path=str(new.path), branch=new.branch, base=new.base,
                        repo=str(new.repo), state="orphaned"), force=True)
    except SwarmError as exc:  # the spawn's own error matters more; this one is only logged
        log.warning("could not remove worktree of failed spawn", extra={"path": str(new.path), "reason": str(exc)})


def _dirty_warning(cwd: Path, name: str, sha: str) -> list[str]:
    dirty = git.status_lines(cwd)
    if not dirty:
        return []
    log.info("checkout had uncommitted changes", extra={"cwd": str(cwd), "paths": len(dirty)})
    return [(f"the checkout at {cwd} has {plural(len(dirty), 'uncommitted path')}; they are not in {name}'s "
             f"worktree, which starts from commit {sha[:10]} (commit them first if {name} needs them)")]


# -- inspect -----------------------------------------------------------------------


def of_member(team: str, member: Member) -> Worktree | None:
    """The worktree recorded in ``member``, inspected; None if it has none."""
    tree = _recorded(team, member)
    if tree is None or not Path(tree.path).is_dir():
        return tree
    _measure(tree)
    tree.state = _state(member, tree)
    return tree


def _recorded(team: str, member: Member) -> Worktree | None:
    if not member.worktree_path:
        return None
    return Worktree(team=team, teammate=member.name, path=member.worktree_path,
                    branch=member.worktree_branch or "", base=member.worktree_base or "",
                    repo=member.worktree_repo or "", state="removed")


def _state(member: Member, tree: Worktree) -> str:
    starting = member.pid is None and member.status == "starting"
    if member_kind(member, Machine({})).process_runs() or (starting and _young(tree.path)):
        return "live"
    if member.status == "dead" or starting:
        return "orphaned"
    return "changed" if tree.changed else "unchanged"


def _measure(tree: Worktree) -> None:
    """Fill ``ahead``, ``uncommitted`` and ``diffstat`` from git."""
    path = Path(tree.path)
    if not tree.base:  # no member entry records it: count from where HEAD forked off the main checkout's HEAD
        head = git.git(path, "rev-parse", "HEAD").strip()
        tree.base = git.git(tree.repo or path, "merge-base", "HEAD", head).strip()
    found = git_worktree.changes(path, tree.base)
    tree.ahead, tree.uncommitted, tree.diffstat = found.ahead, found.uncommitted, found.diffstat
    tree.unmerged = git_worktree.unmerged(path, "HEAD", tree.branch) if tree.ahead else 0


def _young(path: str) -> bool:
    return _age(path) < STARTING_GRACE_S


def _age(path: str) -> float:
    """Seconds since the worktree was created (its ``.git`` file is written once)."""
    try:
        return time.time() - os.stat(Path(path) / ".git").st_mtime
    except OSError:
        return float("inf")


# -- shutdown ----------------------------------------------------------------------


def finish_worktree(home: Home, team: str, member: Member) -> Worktree | None:
    """After ``member`` stopped: remove its unchanged worktree and branch, or keep a changed one and tell the lead.

    Errors are logged, never raised: the teammate is already down, and a
    worktree left in place loses nothing.
    """
    tree = _recorded(team, member)
    if tree is None or not Path(tree.path).is_dir():
        return None
    try:
        _measure(tree)
        if tree.changed:
            tree.state = "changed"
            _tell_lead(home, team, tree)
        else:
            remove(tree)
        return tree
    except SwarmError as exc:
        log.warning("could not finish worktree; left in place",
                    extra={"team": team, "agent": member.name, "path": tree.path, "reason": str(exc)})
        return None


def _tell_lead(home: Home, team: str, tree: Worktree) -> None:
    lines = [f"{tree.teammate}'s worktree was kept because it has changes.",
             f"path: {tree.path}",
             f"branch: {tree.branch}, {plural(tree.ahead, 'commit')} ahead of {tree.base[:10]}"]
    if tree.uncommitted:
        lines.append(f"uncommitted: {plural(tree.uncommitted, 'path')} (`git -C {tree.path} status`)")
    if tree.diffstat:
        lines += ["diffstat:", tree.diffstat]
    if tree.ahead:
        lines.append(f"Review with `git log -p {tree.base[:10]}..{tree.branch}`, merge with `git merge {tree.branch}`.")
    lines.append(f"`swarm worktrees prune --team {team}` removes it once nothing in it is unmerged or uncommitted.")
    Mailbox(home, team).send(LEAD_NAME, "\n".join(lines), sender="swarm", summary=f"worktree of {tree.teammate} kept")


def remove(tree: Worktree, *, force: bool = False) -> None:
    """Remove the worktree, and its ``swarm/`` branch unless that holds commits no other branch has.

    Without ``force`` git itself refuses a worktree with uncommitted changes.
    """
    repo = Path(tree.repo) if tree.repo else Path(tree.path)
    git_worktree.remove(repo, tree.path, tree.branch, tree.base, force=force)
    tree.state = "removed"
    log.info("removed worktree", extra={"team": tree.team, "agent": tree.teammate, "path": tree.path,
                                        "branch": tree.branch})


# -- list and prune ----------------------------------------------------------------


def list_worktrees(home: Home, team: str | None = None, cwd: Path | None = None) -> list[Worktree]:
    """Every swarm worktree of ``team`` (default: all teams) in the repositories members used and ``cwd``'s."""
    members = _members_by_path(home, team)
    repos = {Path(m.worktree_repo) for _, m in members.values() if m.worktree_repo}
    if cwd is not None:
        try:
            repos.add(git.repo_root(cwd))
        except UsageError:  # not in a repository: only the ones members recorded
            pass
    found = []
    for repo in sorted(repos):
        for path, branch in git_worktree.registered(repo):
            tree_team, leaf = _team_and_leaf(repo, path)
            if tree_team is None or (team is not None and tree_team != team):
                continue
            found.append(_inspect(tree_team, leaf, path, branch, repo, members.get(_key(path))))
    return sorted(found, key=lambda t: (t.team, t.teammate, t.path))


def prune(home: Home, team: str | None = None, cwd: Path | None = None, *, force: bool = False) -> list[Pruned]:
    """Remove worktrees whose teammate is not running and that hold nothing unique (``force``: changes too).

    A branch with commits no other branch has is kept even with ``force``.
    """
    return [_prune_one(tree, force) for tree in list_worktrees(home, team, cwd)]


def _prune_one(tree: Worktree, force: bool) -> Pruned:
    if tree.state == "live":
        return Pruned(tree, False, "its teammate is running")
    if not tree.has_member and _young(tree.path):
        return Pruned(tree, False, f"created {_age(tree.path):.0f}s ago, maybe by a spawn in progress; "
                                   "prune again in a few seconds")
    if tree.uncommitted and not force:
        return Pruned(tree, False, f"{plural(tree.uncommitted, 'uncommitted path')}; "
                                   "commit in the worktree, or --force discards them")
    if tree.unmerged and not force:
        return Pruned(tree, False, f"{plural(tree.unmerged, 'unmerged commit')}; "
                                   f"merge {tree.branch}, or --force removes the worktree and keeps the branch")
    if tree.unmerged and not tree.branch:
        return Pruned(tree, False, "commits on a detached HEAD; `git branch` them first")
    try:
        remove(tree, force=force)
    except BackendError as exc:
        return Pruned(tree, False, str(exc))
    return Pruned(tree, True, _removal_reason(tree))


def _removal_reason(tree: Worktree) -> str:
    if not tree.changed:
        return "no changes"
    parts = ["merged"] if tree.ahead and not tree.unmerged else []
    if tree.uncommitted:
        parts.append(f"{plural(tree.uncommitted, 'uncommitted path')} discarded")
    if tree.unmerged:
        parts.append(f"branch {tree.branch} kept ({plural(tree.unmerged, 'unmerged commit')})")
    return "; ".join(parts)


def _members_by_path(home: Home, team: str | None) -> dict[str, tuple[str, Member]]:
    store = TeamStore(home)
    teams = [team] if team is not None else [t.name for t in store.list()]
    found = {}
    for name in teams:
        if not store.exists(name):
            continue
        reap_dead(home, name)
        for member in store.get(name).members:
            if member.worktree_path:
                found[_key(member.worktree_path)] = (name, member)
    return found


def _key(path: Path | str) -> str:
    return str(Path(path).resolve())


def _team_and_leaf(repo: Path, path: Path) -> tuple[str | None, str]:
    try:
        rel = path.resolve().relative_to((repo / WORKTREES_DIR).resolve())
    except ValueError:
        return None, ""
    return (rel.parts[0], rel.parts[1]) if len(rel.parts) == 2 else (None, "")


def _inspect(team: str, leaf: str, path: Path, branch: str, repo: Path,
             owner: tuple[str, Member] | None) -> Worktree:
    if owner is not None:
        tree = of_member(*owner)
        if tree is not None:
            tree.branch = branch  # what is checked out now: "" when detached (prune then keeps unmerged commits)
            return tree
    tree = Worktree(team=team, teammate=leaf, path=str(path), branch=branch, base="", repo=str(repo),
                    state="orphaned", has_member=False)
    _measure(tree)
    return tree
