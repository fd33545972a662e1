"""A long-lived teammate process compacts its conversation and keeps answering; its transcript stays whole."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from swarm.agent.transcript import Transcript
from swarm.core.frames import IdleNotification, entry_frame
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.core.teams import TeamStore
from swarm.runtime.spawn import SpawnRequest, spawn
from tests.backends.helpers import retry_until


def _idles(home: Home, team: str, name: str) -> int:
    return sum(isinstance(f := entry_frame(e), IdleNotification) and f.sender == name
               for e in Mailbox(home, team).read("team-lead"))


def test_a_teammate_near_its_window_compacts_and_goes_on(home: Home, team: str, workdir: Path, playbook: Path,
                                                         start: Callable[..., Member]) -> None:
    start("probe")  # what a first turn costs this teammate (system prompt, tools, context): its window is set above
    retry_until(lambda: _idles(home, team, "probe") == 1, 20, what="the probe's first turn")
    probe = TeamStore(home).get(team).member("probe")
    assert probe is not None and probe.tokens
    window = int((probe.tokens + 1_500) / 0.9)  # room for about three padded messages, then compaction
    env = {**os.environ, "CLAUDE_CODE_AUTO_COMPACT_WINDOW": str(window)}
    spawn(home, SpawnRequest(team=team, name="w", prompt="hello", cwd=workdir, playbook=playbook,
                             backend="subprocess"), env)
    retry_until(lambda: _idles(home, team, "w") == 1, 20, what="w's first turn")

    pad = "lorem ipsum " * 150  # about 450 tokens a message
    for i in range(12):
        Mailbox(home, team).send("w", f"ping tok{i}\n{pad}", sender="team-lead")
        retry_until(lambda i=i: _idles(home, team, "w") == i + 2, 20, what=f"w's answer {i}")
    pongs = [e.text for e in Mailbox(home, team).read("team-lead") if e.sender == "w" and e.text.startswith("pong")]
    assert pongs == [f"pong tok{i} from w" for i in range(12)]  # still answering, in order, after compacting

    transcript = Transcript(home.transcript_path(team, "w"))
    compactions = [r for r in transcript.records() if r.get("kind") == "compaction"]
    assert len(compactions) >= 2
    assert all(r["messages"][0]["content"][0]["text"].startswith("This session is being continued")
               for r in compactions)
    messages = [r for r in transcript.records() if r.get("kind") == "message"]
    assert sum("ping tok" in str(r["message"]) for r in messages if r["message"]["role"] == "user") == 12
    assert len(transcript.messages()) < len(messages) / 2  # what a restart would load: from the last compaction
