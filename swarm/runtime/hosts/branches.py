"""The lead's view of teammates on hosts in ``swarm worktrees``: their branches as the team's remote has them.

A teammate on a host has no worktree on the lead's machine; its entry records the
remote (``remoteRepo``) and the commit its branch started from (``remoteBase``).
``remote_worktrees`` fetches each such branch into the lead's repository under
``refs/swarm-remote/<team>/<name>`` (or a bare scratch repository in the lead's home
when it runs outside one: ``hosts.code``) and measures it there: commits ahead of
the base, files changed, the sha last pushed. Nothing is read from the host's disk:
what the lead sees is what reached the remote (uncommitted work on the host is not
counted, and not shown).
"""

from __future__ import annotations

import logging
from pathlib import Path

from swarm.backends.git import count_commits, repo_root
from swarm.core.home import Home
from swarm.core.protocol import Member
from swarm.core.teams import TeamStore
from swarm.errors import SwarmError, UsageError
from swarm.runtime.hosts.code import changed_files, fetch_branch, remote_ref, scratch_repo, teammate_branch
from swarm.runtime.worktrees import Worktree

log = logging.getLogger(__name__)


def remote_worktrees(home: Home, team: str | None, cwd: Path | None) -> list[Worktree]:
    """A ``Worktree`` row per teammate of ``team`` (default: every team) that runs, or ran, on a host with a remote."""
    store = TeamStore(home)
    teams = [team] if team is not None else [t.name for t in store.list()]
    placed = [(name, m) for name in teams if store.exists(name) for m in store.get(name).members
              if m.host and m.remote_repo]
    if not placed:
        return []
    repo = _local_repo(home, cwd)
    return sorted((_measure(repo, name, member) for name, member in placed), key=lambda t: (t.team, t.teammate))


def _local_repo(home: Home, cwd: Path | None) -> Path:
    if cwd is not None:
        try:
            return repo_root(cwd)
        except UsageError:
            pass
    return scratch_repo(home)


def _measure(repo: Path, team: str, member: Member) -> Worktree:
    remote, base = member.remote_repo or "", member.remote_base or ""
    tree = Worktree(team=team, teammate=member.name, path="", branch=teammate_branch(team, member.name), base=base,
                    repo=remote, state="live" if member.present() else "unchanged", host=member.host or "")
    try:
        tree.pushed = fetch_branch(repo, remote, team, member.name) or ""
        if tree.pushed and base:
            tree.ahead = count_commits(repo, base, remote_ref(team, member.name))
            tree.unmerged = tree.ahead
            tree.files_changed = changed_files(repo, base, remote_ref(team, member.name))
    except SwarmError as exc:
        log.warning("could not read %s@%s's branch from %s: %s", member.name, team, remote, exc)
        tree.error = str(exc)
    if tree.state != "live" and tree.ahead:
        tree.state = "changed"
    return tree
