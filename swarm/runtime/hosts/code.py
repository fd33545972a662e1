"""Code across machines: the team's base on a git remote, a clone per teammate on its host, its branch pushed back.

No shared filesystem: the lead pushes the commit its teammates start from to
``swarm/<team>/base`` on the remote (``push_base``); the host clones the remote
into the teammate's work directory and checks out ``swarm/<team>/<name>`` at
that commit (``check_out``); the host pushes that branch whenever the teammate
is idle with commits not pushed yet, and when it ends (``push_branch``). Only
committed work travels.
"""

from __future__ import annotations

from pathlib import Path

from swarm.backends.git import git, succeeds
from swarm.core.home import Home
from swarm.core.teams import TeamStore
from swarm.errors import UsageError


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


def check_out(work: Path, repo: str, team: str, name: str, sha: str) -> None:
    """Make ``work`` a clone of ``repo`` on branch ``swarm/<team>/<name>`` at ``sha`` (fetched again if it is one)."""
    if (work / ".git").is_dir():
        git(work, "fetch", "--quiet", "origin")
    else:
        git(work, "clone", "--quiet", "--no-checkout", repo, ".")
    git(work, "checkout", "--quiet", "-B", teammate_branch(team, name), sha)


def head(work: Path) -> str | None:
    return git(work, "rev-parse", "HEAD").strip() if succeeds(work, "rev-parse", "--verify", "HEAD") else None


def push_branch(work: Path, team: str, name: str) -> str | None:
    """Push the teammate's branch to ``origin``; the sha pushed."""
    sha = head(work)
    if sha is not None:
        git(work, "push", "--quiet", "origin", f"+{sha}:refs/heads/{teammate_branch(team, name)}")
    return sha
