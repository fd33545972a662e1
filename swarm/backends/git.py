"""Run ``git``: argument lists, ``-C <dir>``, a bounded timeout, one-line errors.

git is an external program like tmux, so it sits with the backends: both the
runtime (teammate worktrees) and the agent layer (subagent worktrees) use it.

Every call goes through ``git()``, the one boundary where git's failures
become swarm errors:

    missing git binary         -> BackendError ("install git")
    timeout                    -> BackendError
    non-zero exit              -> BackendError (first line of git's stderr)
    lock contention            -> retried with short, jittered backoff first
                                  (``index.lock``, ``config.lock``, "could not lock", ...)

The environment is the caller's minus variables that would point git at
another repository (``GIT_DIR`` ...), with ``LC_ALL=C`` so stderr can be
recognised and ``GIT_OPTIONAL_LOCKS=0`` so read-only commands such as
``status`` never take ``index.lock``.
"""

from __future__ import annotations

import logging
import os
import random
import subprocess
import time
from pathlib import Path

from swarm.errors import BackendError, UsageError

log = logging.getLogger(__name__)

TIMEOUT = 60.0
"""Seconds one git command may run (a checkout of a large tree takes a while)."""
LOCK_RETRIES = 8
LOCK_BACKOFF = 0.05
"""First retry delay in seconds; doubled per attempt (with jitter), at most ``LOCK_BACKOFF_MAX``."""
LOCK_BACKOFF_MAX = 1.0
LOCK_MARKERS = ("index.lock", "config.lock", ".lock': File exists", "could not lock")
_REPO_VARIABLES = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
                   "GIT_PREFIX", "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES")


def git(cwd: Path | str, *args: str, timeout: float = TIMEOUT) -> str:
    """stdout of ``git -C cwd args...``; BackendError with git's reason on failure."""
    for attempt in range(LOCK_RETRIES + 1):
        result = _run(cwd, args, timeout)
        if result.returncode == 0:
            return result.stdout
        if attempt < LOCK_RETRIES and _is_lock_contention(result.stderr):
            delay = min(LOCK_BACKOFF * 2 ** attempt, LOCK_BACKOFF_MAX) * random.uniform(0.5, 1.5)
            log.debug("git lock busy; retrying", extra={"git_args": args[:2], "attempt": attempt + 1, "delay": delay})
            time.sleep(delay)
            continue
        break
    raise BackendError(f"git {args[0]} failed in {cwd}: {_reason(result)}")


def succeeds(cwd: Path | str, *args: str, timeout: float = TIMEOUT) -> bool:
    """True if ``git -C cwd args...`` exits 0 (for questions such as "does this ref exist")."""
    return _run(cwd, args, timeout).returncode == 0


def _run(cwd: Path | str, args: tuple[str, ...], timeout: float) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, timeout=timeout,
                              env=_env(), stdin=subprocess.DEVNULL, check=False)
    except FileNotFoundError as exc:
        raise BackendError("git is not installed or not on PATH; install git to use worktrees") from exc
    except subprocess.TimeoutExpired as exc:
        raise BackendError(f"git {args[0]} in {cwd} did not finish within {timeout:g}s") from exc


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _REPO_VARIABLES}
    env.update(LC_ALL="C", GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0")
    return env


def _is_lock_contention(stderr: str) -> bool:
    return any(marker in stderr for marker in LOCK_MARKERS)


def _reason(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line.strip() for line in result.stderr.splitlines() if line.strip()]
    fatal = [line for line in lines if line.startswith(("fatal:", "error:"))]
    return (fatal or lines or [f"exit status {result.returncode}"])[0]


# -- questions about a repository ----------------------------------------------


def repo_root(path: Path) -> Path:
    """The main working tree of the repository holding ``path`` (also from inside a linked worktree)."""
    if _run(path, ("rev-parse", "--is-inside-work-tree"), TIMEOUT).stdout.strip() != "true":
        raise UsageError(f"{path} is not inside a git repository; a worktree needs one (run `git init` first)")
    first = git(path, "worktree", "list", "--porcelain").splitlines()[:3]
    if "bare" in first or not first[0].startswith("worktree "):
        raise UsageError(f"the repository of {path} has no main working tree (bare); a worktree needs one")
    return Path(first[0].removeprefix("worktree ")).resolve()


def common_dir(path: Path) -> Path:
    """The repository's shared ``.git`` directory (the same from every worktree)."""
    found = Path(git(path, "rev-parse", "--git-common-dir").strip())
    return (found if found.is_absolute() else Path(path) / found).resolve()


def commit_of(repo: Path, ref: str) -> str:
    """The full sha of the commit ``ref`` names; UsageError if it names none.

    Messages about a ref other than ``HEAD`` name ``--base``: the only way a user gives one.
    """
    if ref.startswith("-"):
        raise UsageError(f"--base {ref!r} is not a git revision")
    result = _run(repo, ("rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"), TIMEOUT)
    if result.returncode != 0:
        if ref == "HEAD":
            raise UsageError(f"the repository at {repo} has no commits yet; commit something first "
                             "(a worktree starts from a commit)")
        raise UsageError(f"--base {ref!r} is not a commit in {repo}; use a branch, tag or sha")
    return result.stdout.strip()


def branch_exists(repo: Path, branch: str) -> bool:
    return succeeds(repo, "show-ref", "--verify", "--quiet", f"refs/heads/{branch}")


def status_lines(tree: Path) -> list[str]:
    """``git status --porcelain`` of a working tree: one line per changed path or untracked file/directory."""
    return [line for line in git(tree, "status", "--porcelain").splitlines() if line]


def count_commits(tree: Path | str, since: str, until: str = "HEAD") -> int:
    """Commits reachable from ``until`` but not from ``since``."""
    return int(git(tree, "rev-list", "--count", f"{since}..{until}").strip() or 0)
