"""The order in which a teammate's joining becomes visible (real team file, real transcript)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from swarm.agent.transcript import Transcript
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.core.teams import TeamStore
from swarm.models.messages import Usage
from swarm.teammate.config import TeammateConfig
from swarm.teammate.lifecycle import Lifecycle

TEAM = "t"


def test_a_life_is_in_the_transcript_before_anyone_can_see_the_member_idle(home: Home, tmp_path: Path) -> None:
    """Whoever sees the member active and idle (and may kill it at once: ``kill -9`` leaves no chance to write
    afterwards) finds that life's ``joined`` in the transcript; seen in CI as a restart test counting two lives
    of three."""
    TeamStore(home).create(TEAM)
    TeamStore(home).add_member(TEAM, Member(agent_id=f"w@{TEAM}", name="w", is_active=False, status="starting"))
    transcript = Transcript(home.transcript_path(TEAM, "w"))
    config = TeammateConfig(team=TEAM, name="w", agent_id=f"w@{TEAM}", cwd=tmp_path)
    life = Lifecycle(config, home, Mailbox(home, TEAM), transcript, pane_id="%1")
    seen: list[tuple[str, int]] = []
    store = life.teams

    class Watched:
        """The team store, noting how many lives the transcript holds at each change a reader could see."""

        def __getattr__(self, name: str) -> Any:
            return getattr(store, name)

        def update_member(self, *args: Any, **fields: Any) -> Any:
            seen.append(("member", len(transcript.events("joined"))))
            return store.update_member(*args, **fields)

        def set_activity(self, *args: Any, **fields: Any) -> Any:
            seen.append(("activity", len(transcript.events("joined"))))
            return store.set_activity(*args, **fields)

    life.teams = Watched()  # type: ignore[assignment]
    life.joined(os.getpid(), None, Usage())
    assert seen == [("member", 1), ("activity", 1)]
    member = TeamStore(home).get(TEAM).member("w")
    assert member is not None and member.is_active and member.status == "idle"
