"""What one ``spawn()`` does must not grow with the team: no liveness check per member, one team-file pass less.

Counted, not timed: the files the spawning process opens (``open`` audit
events, ``tests/conftest.py`` OpenLog) while it spawns a real teammate into a
team of one and into a team padded with 48 live members. Before, every spawn
judged every member's process (three ``/proc`` reads each) to find the dead.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import psutil
import pytest

from swarm.backends.procs import kill_tree
from swarm.core.home import Home
from swarm.core.protocol import Activity, Member
from swarm.core.team_view import TeamView
from swarm.core.teams import TeamStore
from swarm.runtime.spawn import SpawnRequest, spawn
from swarm.teammate.served import teammate_processes

if TYPE_CHECKING:
    from tests.conftest import OpenLog

PADDING = 48


def _kinds(paths: list[str]) -> Counter[str]:
    return Counter("proc" if p.startswith("/proc/") else "team file" if p.endswith("config.json") else
                   "activity" if "/activity/" in p else "other" for p in paths)


def _pad(home: Home, team: str, count: int) -> None:
    """``count`` live members (this test's own process stands in for theirs) that a spawn must leave alone."""
    me = psutil.Process()
    for i in range(count):
        TeamStore(home).add_member(team, Member(
            agent_id=f"pad{i}@{team}", name=f"pad{i}", agent_type="general-purpose", prompt="", joined_at=0,
            cwd="/", backend_type="subprocess", is_active=True, status="idle", pid=me.pid,
            proc_start=me.create_time(), subscriptions=[]))


def test_the_files_a_spawn_opens_do_not_grow_with_the_team(home: Home, tmp_path: Path, open_log: OpenLog,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    looked_at: list[str] = []  # members whose activity the spawning process looked up (a stat each, at least)
    plain = TeamView.activity

    def activity(view: TeamView, team: str, name: str) -> Activity | None:
        looked_at.append(name)
        return plain(view, team, name)

    monkeypatch.setattr(TeamView, "activity", activity)
    playbook = tmp_path / "playbook.toml"
    playbook.write_text('[default]\ntext = "ok"\n')
    TeamStore(home).create("t")

    def spawn_counting(name: str) -> Counter[str]:
        request = SpawnRequest(team="t", name=name, prompt="hello", backend="subprocess", cwd=tmp_path,
                               playbook=playbook)
        time.sleep(0.1)  # the last write settles (TeamView re-reads a file younger than the kernel's file clock)
        TeamStore(home).get("t")  # this process's view of the team is current when counting starts
        looked_at.clear()
        with open_log.recording() as opened:
            spawn(home, request, dict(os.environ))
        counted = _kinds(opened)
        counted["activity lookups"] = len(looked_at)
        settled(name)
        return counted

    def settled(name: str) -> None:
        """Until the teammate took its prompt and went idle: its joining no longer changes the team's files."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            member = TeamStore(home).get("t").member(name)
            if member is not None and member.status == "idle":
                return
            time.sleep(0.05)
        raise AssertionError(f"{name} never went idle")

    try:
        spawn_counting("warm")  # first use: imports, the spool directory, the view of the team
        small = spawn_counting("small")
        _pad(home, "t", PADDING)
        big = spawn_counting("big")
    finally:
        for proc in teammate_processes(str(home.root)):
            kill_tree(proc.pid, 1.0)
    assert big["proc"] == small["proc"], f"/proc reads per spawn: {small['proc']} in a team of 3, {big['proc']} in " \
                                         f"a team of {PADDING + 3}: a liveness check per member"
    assert big["team file"] == small["team file"]
    # the team view re-reads the activity of members whose activity changed since it last looked: the real
    # teammates started before (warm, small) may still be joining; the padded members never are
    assert big["activity"] <= 2, big
    assert big["activity lookups"] == 0, big  # no activity overlay (a stat per member) in the spawn's own reads
    assert abs(big["other"] - small["other"]) <= 2, (small, big)
