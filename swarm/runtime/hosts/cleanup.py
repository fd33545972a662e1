"""A host's work directories: where each teammate works, and removing those whose work is safe on the remote.

A teammate on a host works in ``<home>/work/<team>/<name>`` (a clone of the team's
remote when the team has one, ``hosts.code``). When it has ended, the host removes
that directory if its branch is on the remote exactly as here and nothing is
uncommitted (``clean_work``); otherwise it keeps it and logs why: work is never
lost. ``swarm host clean [--dry-run]`` does the same for every directory whose
teammate no longer runs (``clean_all``), e.g. after a host was stopped.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from swarm.core.home import Home
from swarm.core.teams import TeamStore
from swarm.errors import SwarmError
from swarm.runtime.hosts.code import remove_work, unpushed

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Cleaned:
    team: str
    name: str
    work: Path
    kept: str | None
    """Why it stays; None when it was removed (or would be, with ``dry_run``)."""


def work_of(home: Home, team: str, name: str) -> Path:
    """A teammate's work directory on this host (its cwd; a clone of the team's remote when it has one)."""
    return home.root / "work" / team / name


def clean_work(work: Path, team: str, name: str, *, dry_run: bool = False) -> str | None:
    """Remove an ended teammate's work directory if its branch is pushed and nothing is uncommitted; else keep it
    and log why. The reason it is kept, or None when it went (or would, ``dry_run``)."""
    kept = unpushed(work, team, name)
    if kept is not None:
        log.warning("kept %s@%s's work directory %s: %s", name, team, work, kept)
        return kept
    if not dry_run:
        remove_work(work)
        log.info("removed %s@%s's work directory %s: its branch is pushed", name, team, work)
    return None


def clean_all(home: Home, *, dry_run: bool = False) -> list[Cleaned]:
    """``clean_work`` for each clone in this home whose teammate does not run (a running one is listed, kept)."""
    found: list[Cleaned] = []
    root = home.root / "work"
    for work in sorted(root.glob("*/*")):
        if not (work / ".git").is_dir():
            continue
        team, name = work.parent.name, work.name
        try:
            member = TeamStore(home).get(team).member(name)
        except SwarmError as exc:
            found.append(Cleaned(team, name, work, f"cannot read team {team} ({exc})"))
            continue
        if member is not None and member.present():
            found.append(Cleaned(team, name, work, "it still runs"))
            continue
        found.append(Cleaned(team, name, work, clean_work(work, team, name, dry_run=dry_run)))
    return found
