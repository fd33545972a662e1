"""Git worktrees on a fresh branch: create one, measure what changed in it, remove it.

The one owner of ``git worktree add`` / ``remove`` in swarm. Teammate
worktrees (``runtime/worktrees.py``, which knows teams and members) and
subagent worktrees (``agent/isolation.py``) are both built on these
functions, which know only repositories, paths, branches and commits
(callers log what they did, with their own context).

Worktrees live under ``<repo>/.swarm/``, which ``exclude_swarm_dir`` keeps
out of git with a line in ``.git/info/exclude``, so the main checkout does
not see them as untracked files.

A worktree is *changed* when its HEAD has commits beyond its base or
``git status`` lists anything in it (untracked files included). Its branch
is *spare* when it is a ``swarm/`` branch holding no commit that is not
also on its base or on another branch: removing a worktree deletes a spare
branch with it and never deletes any other.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from swarm.backends import git
from swarm.core.flock import LockTimeout, locked
from swarm.errors import BackendError, LockTimeoutError

SWARM_DIR = Path(".swarm")
EXCLUDE_LINE = ".swarm/"
ADD_ATTEMPTS = 3
"""Tries of one worktree name after a failed add of ours (parallel adds race in git's admin files)."""
MAX_SUFFIX = 99
"""``name``, ``name-2`` ... ``name-99`` are tried before giving up on a taken name."""
DIFFSTAT_LINES = 20
"""A longer ``git diff --stat`` keeps its first lines and the totals line."""
EXCLUDE_LOCK_S = 10.0


@dataclass(frozen=True)
class Added:
    """A worktree just created: where, on which branch, from which commit, in which repository."""

    path: Path
    branch: str
    base: str
    """Full sha the branch started from."""
    repo: Path
    """The repository's main working tree."""


@dataclass(frozen=True)
class Changes:
    """What a worktree holds beyond its base commit."""

    ahead: int
    """Commits on the worktree's HEAD beyond the base."""
    uncommitted: int
    """Paths ``git status`` lists (modified, staged, untracked)."""
    diffstat: str = ""
    """``git diff --stat`` of the working tree against the base (untracked files not included)."""

    @property
    def changed(self) -> bool:
        return self.ahead > 0 or self.uncommitted > 0

    def summary(self, *, merged: bool = False) -> str:
        """E.g. ``2 commits ahead, 1 uncommitted path, 1 file changed, 3 insertions(+)``.

        ``merged`` adds `` (merged)`` after the commits when another branch holds them all.
        """
        parts = [plural(self.ahead, "commit") + " ahead" + (" (merged)" if merged and self.ahead else "")]
        if self.uncommitted:
            parts.append(plural(self.uncommitted, "uncommitted path"))
        if self.diffstat:
            parts.append(self.diffstat.splitlines()[-1].strip())
        return ", ".join(parts)


# -- create ------------------------------------------------------------------------


def create(cwd: Path, where: Path, branch_prefix: str, name: str, base: str | None = None) -> Added:
    """A new worktree of ``base`` (default: the HEAD of the checkout ``cwd`` is in).

    It is added at ``<repo>/<where>/<leaf>`` on branch ``<branch_prefix>/<leaf>``,
    ``leaf`` being the first free of ``name``, ``name-2`` ... (see ``add``).
    UsageError when ``cwd`` is not in a repository with a main working tree
    or ``base`` names no commit.
    """
    repo = git.repo_root(cwd)
    sha = git.commit_of(cwd, base or "HEAD")
    exclude_swarm_dir(repo)
    path, branch = add(repo, repo / where, branch_prefix, name, sha)
    return Added(path=path, branch=branch, base=sha, repo=repo)


def add(repo: Path, parent: Path, branch_prefix: str, name: str, sha: str) -> tuple[Path, str]:
    """``git worktree add -b <branch_prefix>/<leaf> <parent>/<leaf> <sha>`` at the first free leaf.

    A leaf is free when neither its directory nor its branch exists; losing
    a race with a parallel ``add`` for the same leaf moves on to the next.
    """
    for n in range(1, MAX_SUFFIX + 1):
        leaf = name if n == 1 else f"{name}-{n}"
        path, branch = parent / leaf, f"{branch_prefix}/{leaf}"
        if path.exists() or git.branch_exists(repo, branch):
            continue
        failure: BackendError | None = None
        for _ in range(ADD_ATTEMPTS):
            try:
                git.git(repo, "worktree", "add", "--quiet", "-b", branch, str(path), sha)
                return path, branch
            except BackendError as exc:
                failure = exc
                if _is_ours(repo, path, branch):  # it took effect, then a retry met it (git lock contention)
                    return path, branch
                if not _half_made(repo, path, branch):
                    break
                git.git(repo, "branch", "-D", branch)  # undo our failed attempt, then try this name again
        if path.exists() or git.branch_exists(repo, branch):  # lost a race for this name; try the next
            continue
        assert failure is not None  # the loop ran and failed: it returns on success
        raise failure
    raise BackendError(f"branches {branch_prefix}/{name} to -{MAX_SUFFIX} are all taken; remove old worktrees "
                       "(`swarm worktrees prune`) or delete branches with `git branch -D`")


def _half_made(repo: Path, path: Path, branch: str) -> bool:
    """A failed ``worktree add`` of ours that made the branch but no worktree.

    Parallel ``git worktree add`` calls race on each other's admin files
    ("failed to read .git/worktrees/x/commondir"); the loser has created its
    branch (checked free just before) and nothing else.
    """
    return not path.exists() and git.branch_exists(repo, branch) and \
        branch not in {b for _, b in registered(repo)}


def _is_ours(repo: Path, path: Path, branch: str) -> bool:
    """Is ``path`` a worktree git knows, with ``branch`` checked out?"""
    try:
        return (path.resolve(), branch) in {(p.resolve(), b) for p, b in registered(repo)}
    except BackendError:
        return False


def exclude_swarm_dir(repo: Path) -> None:
    """Add ``.swarm/`` to ``.git/info/exclude`` once (parallel callers take turns on a lock)."""
    common = git.common_dir(repo)
    exclude = common / "info" / "exclude"
    lock_path = common / "swarm-exclude.lock"
    try:
        with locked(lock_path, EXCLUDE_LOCK_S):
            text = exclude.read_text(encoding="utf-8") if exclude.exists() else ""
            if any(line.strip() in (EXCLUDE_LINE, "/" + EXCLUDE_LINE) for line in text.splitlines()):
                return
            exclude.parent.mkdir(parents=True, exist_ok=True)
            with exclude.open("a", encoding="utf-8") as handle:
                handle.write(("" if text.endswith("\n") or not text else "\n") + EXCLUDE_LINE + "\n")
    except LockTimeout as exc:
        raise LockTimeoutError(f"could not lock {lock_path} within {EXCLUDE_LOCK_S:g}s; retry") from exc
    except OSError as exc:
        raise BackendError(f"cannot add {EXCLUDE_LINE} to {exclude}: {exc.strerror}") from exc


# -- measure -----------------------------------------------------------------------


def changes(tree: Path, base: str) -> Changes:
    """Commits beyond ``base``, uncommitted paths and the diffstat of the worktree at ``tree``."""
    return Changes(ahead=git.count_commits(tree, base), uncommitted=len(git.status_lines(tree)),
                   diffstat=_diffstat(tree, base))


def _diffstat(tree: Path, base: str) -> str:
    lines = git.git(tree, "diff", "--stat=100", base, "--").rstrip().splitlines()
    return "\n".join([*lines[:DIFFSTAT_LINES], *lines[-1:]] if len(lines) > DIFFSTAT_LINES + 1 else lines)


def unmerged(where: Path, rev: str, own_branch: str) -> int:
    """Commits of ``rev`` that no branch but ``own_branch`` (local or remote) holds."""
    exclude = [f"--exclude={own_branch}"] if own_branch else []
    return int(git.git(where, "rev-list", "--count", rev, "--not", *exclude, "--branches", "--remotes").strip() or 0)


# -- remove ------------------------------------------------------------------------


def remove(repo: Path, path: Path | str, branch: str, base: str, *, force: bool = False) -> None:
    """Remove the worktree at ``path``, and its branch when that is spare (see the module docstring).

    Without ``force`` git itself refuses a worktree with uncommitted changes.
    """
    if not repo.is_dir():
        raise BackendError(f"repository {repo} of worktree {path} is gone")
    git.git(repo, "worktree", "remove", *(["--force"] if force else []), str(path))
    if branch_is_spare(repo, branch, base):
        git.git(repo, "branch", "--quiet", "-D", branch)


def branch_is_spare(repo: Path, branch: str, base: str) -> bool:
    """True for a ``swarm/`` branch with nothing beyond ``base``, or only commits other branches hold too."""
    if not branch.startswith("swarm/") or not git.branch_exists(repo, branch):
        return False
    if base and git.count_commits(repo, base, branch) == 0:
        return True
    return unmerged(repo, branch, branch) == 0


def plural(n: int, word: str) -> str:
    """``1 commit``, ``2 commits``."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def registered(repo: Path) -> list[tuple[Path, str]]:
    """(path, branch) of each linked worktree git knows in ``repo`` whose directory exists."""
    if not repo.is_dir():
        return []
    out, path = [], None
    for line in git.git(repo, "worktree", "list", "--porcelain").splitlines():
        if line.startswith("worktree "):
            path = Path(line.removeprefix("worktree "))
        elif path is not None and (line.startswith("branch ") or line == "detached"):
            branch = line.removeprefix("branch refs/heads/") if line != "detached" else ""
            if path.is_dir():
                out.append((path, branch))
            path = None
    return out
