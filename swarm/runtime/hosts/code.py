"""Code across machines: the team's base on a git remote, a cached clone per host, the teammate's branch pushed back.

No shared filesystem: the lead pushes the commit its teammates start from to
``swarm/<team>/base`` on the remote (``push_base``); the host keeps one bare
cache per remote (``<home>/hosts/cache/<sha256 of the URL>.git``, fetched under
its lock before each checkout: only what is new travels) and makes each
teammate's work directory a clone of that cache sharing its objects
(``--shared``: the teammate's own commits stay in its directory), with
``origin`` the team's remote, on ``swarm/<team>/<name>`` at that commit
(``check_out``); the host pushes that branch whenever the teammate is idle with
commits not pushed yet, and when it ends (``push_branch``). Only committed work
travels. A work directory whose branch is on the remote as it is here, with
nothing uncommitted, may go (``unpushed`` says why not, ``remove_work``).
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from swarm.backends.git import git, status_lines, succeeds
from swarm.core.home import Home, ensure_dir
from swarm.core.jsonfile import lock_of
from swarm.core.teams import TeamStore
from swarm.errors import SwarmError, UsageError

FETCH_TIMEOUT = 600.0
"""Seconds a fetch into the cache may take (a first fetch of a large remote)."""


def check_remote(url: str) -> str:
    """``url`` as a git remote the lead and hosts push to; UsageError for one git would read as an option or that
    cannot be one (empty, whitespace or control characters)."""
    if not url or url.startswith("-") or any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
        raise UsageError(f"{url!r} is not a git remote; give a URL or path git can push to, e.g. "
                         "--repo git@forge.example:team/project.git")
    return url


def team_remote(home: Home, team: str, cwd: Path) -> str | None:
    """The git remote ``team``'s code travels through to its teammates on hosts: the one the team records
    (``--repo`` at creation, ``[team] repo``), else the ``origin`` of the lead's repository at ``cwd``; None when
    there is neither (the teammate then starts in an empty work directory on its host)."""
    recorded = TeamStore(home).get(team).repo
    if recorded:
        return check_remote(recorded)
    if not succeeds(cwd, "rev-parse", "--git-dir") or not succeeds(cwd, "remote", "get-url", "origin"):
        return None
    return check_remote(git(cwd, "remote", "get-url", "origin").strip())


def base_branch(team: str) -> str:
    return f"swarm/{team}/base"


def teammate_branch(team: str, name: str) -> str:
    return f"swarm/{team}/{name}"


def push_base(cwd: Path, repo: str, team: str, base: str | None) -> str:
    """Push ``base`` (default HEAD) of the repository at ``cwd`` to the team's base branch on ``repo``; its sha."""
    if not succeeds(cwd, "rev-parse", "--git-dir"):
        raise UsageError(f"--repo needs a git repository to push from; {cwd} is not in one (use --cwd)")
    sha = git(cwd, "rev-parse", "--verify", f"{base or 'HEAD'}^{{commit}}").strip()
    git(cwd, "push", "--quiet", repo, f"+{sha}:refs/heads/{base_branch(team)}")
    return sha


def pushed(repo: str, team: str, name: str, cwd: Path) -> str | None:
    """The sha of the teammate's branch on ``repo`` (what it pushed), None when it has none."""
    out = git(cwd, "ls-remote", "--heads", repo, f"refs/heads/{teammate_branch(team, name)}").split()
    return out[0] if out else None


def cache_of(home: Home, repo: str) -> Path:
    """This host's bare cache of remote ``repo``."""
    return home.root / "hosts" / "cache" / f"{hashlib.sha256(repo.encode()).hexdigest()[:24]}.git"


def refresh_cache(home: Home, repo: str) -> Path:
    """Fetch what is new on ``repo`` into this host's cache of it (made on first use), under the cache's lock."""
    cache = cache_of(home, repo)
    ensure_dir(cache.parent)
    with lock_of(cache, timeout=FETCH_TIMEOUT):
        if not (cache / "HEAD").is_file():
            git(cache.parent, "init", "--quiet", "--bare", cache.name)
            git(cache, "config", "gc.auto", "0")  # teammates' clones borrow its objects: never pruned under them
        git(cache, "fetch", "--quiet", "--prune", repo, "+refs/heads/*:refs/heads/*", timeout=FETCH_TIMEOUT)
    return cache


def check_out(home: Home, work: Path, repo: str, team: str, name: str, sha: str) -> None:
    """Make ``work`` a clone of ``repo`` (through this host's cache) on branch ``swarm/<team>/<name>`` at ``sha``."""
    cache = refresh_cache(home, repo)
    if not (work / ".git").is_dir():
        git(work, "clone", "--quiet", "--shared", "--no-checkout", str(cache), ".")
    git(work, "remote", "set-url", "origin", repo)
    git(work, "checkout", "--quiet", "-B", teammate_branch(team, name), sha)


def head(work: Path) -> str | None:
    return git(work, "rev-parse", "HEAD").strip() if succeeds(work, "rev-parse", "--verify", "HEAD") else None


def push_branch(work: Path, team: str, name: str) -> str | None:
    """Push the teammate's branch to ``origin``; the sha pushed."""
    sha = head(work)
    if sha is not None:
        git(work, "push", "--quiet", "origin", f"+{sha}:refs/heads/{teammate_branch(team, name)}")
    return sha


def fetch_branch(repo: Path, remote: str, team: str, name: str) -> str | None:
    """Fetch teammate ``name``'s branch from ``remote`` into ``refs/swarm-remote/<team>/<name>`` of the local
    ``repo`` (the lead's: nothing of its own branches changes); the pushed sha, None when the remote has none yet."""
    if remote.startswith("-"):
        raise UsageError(f"{remote!r} is not a git remote")
    branch = f"refs/heads/{teammate_branch(team, name)}"
    listed = git(repo, "ls-remote", "--end-of-options", remote, branch).split()
    if not listed:
        return None
    git(repo, "fetch", "--quiet", "--no-tags", "--end-of-options", remote,
        f"+{branch}:{remote_ref(team, name)}", timeout=FETCH_TIMEOUT)
    return git(repo, "rev-parse", "--verify", f"{remote_ref(team, name)}^{{commit}}").strip()


def remote_ref(team: str, name: str) -> str:
    return f"refs/swarm-remote/{team}/{name}"


def changed_files(repo: Path, base: str, ref: str) -> int:
    """Files that differ between commit ``base`` and ``ref``."""
    return len([line for line in git(repo, "diff", "--name-only", base, ref, "--").splitlines() if line])


def scratch_repo(home: Home) -> Path:
    """A bare repository in the lead's home to fetch teammates' branches into when it runs outside a repository."""
    path = home.root / "hosts" / "branches.git"
    ensure_dir(path.parent)
    with lock_of(path):
        if not (path / "HEAD").is_file():
            git(path.parent, "init", "--quiet", "--bare", path.name)
    return path


def unpushed(work: Path, team: str, name: str) -> str | None:
    """Why ``work`` must be kept (uncommitted changes, commits not on the remote, no answer from it); None when its
    branch is on the remote exactly as here and nothing is uncommitted."""
    try:
        sha = head(work)
        if sha is None:
            return "it has no commit"
        dirty = status_lines(work)
        if dirty:
            return f"{len(dirty)} uncommitted change(s)"
        listed = git(work, "ls-remote", "origin", f"refs/heads/{teammate_branch(team, name)}").split()
    except SwarmError as exc:
        return f"cannot tell ({exc})"
    if not listed or listed[0] != sha:
        return f"its commit {sha[:12]} is not what the remote has on {teammate_branch(team, name)}"
    return None


def remove_work(work: Path) -> None:
    """Delete a teammate's work directory (only after ``unpushed`` said nothing)."""
    shutil.rmtree(work)
