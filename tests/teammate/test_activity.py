"""A teammate's busy/idle and tokens live beside the team file: turns do not rewrite config.json."""

from __future__ import annotations

import json
import os
from pathlib import Path

from swarm.agent.transcript import Transcript
from swarm.core.frames import IdleNotification, entry_frame
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.runtime.spawn import SpawnRequest, spawn
from tests.backends.helpers import retry_until
from tests.fakes import FakeAnthropicServer, text_reply, usage_json
from tests.forked import run_swarm


def _idles(home: Home, team: str) -> int:
    return sum(isinstance(entry_frame(e), IdleNotification) for e in Mailbox(home, team).read("team-lead"))


def test_turns_leave_the_team_file_alone_and_status_and_transcript_show_tokens_and_cache_use(
        home: Home, team: str, workdir: Path, api: FakeAnthropicServer) -> None:
    env = {**os.environ, "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": api.base_url}
    api.enqueue(text_reply("first", usage=usage_json(100, 10, cache_read=0, cache_creation=90)),
                *(text_reply(f"turn {i}", usage=usage_json(100, 10, cache_read=90, cache_creation=0))
                  for i in range(3)))
    spawn(home, SpawnRequest(team=team, name="w", prompt="start", cwd=workdir, backend="subprocess"), env)
    retry_until(lambda: _idles(home, team) == 1, 20, what="the first turn")
    config = home.config_path(team)
    before = (config.stat().st_ino, config.stat().st_mtime_ns, config.read_bytes())
    for i in range(3):
        Mailbox(home, team).send("w", f"go {i}", sender="team-lead")
        retry_until(lambda i=i: _idles(home, team) == i + 2, 20, what=f"turn {i}")
    assert (config.stat().st_ino, config.stat().st_mtime_ns, config.read_bytes()) == before

    status = run_swarm(["status", "--team", team, "--json"], timeout=30)
    [row] = [r for r in json.loads(status.stdout) if r["name"] == "w"]
    assert row["state"] == "idle"
    assert row["tokens"] == 4 * 110 + 90 + 3 * 90 and row["cache_read_tokens"] == 3 * 90
    assert row["cache_creation_tokens"] == 90

    replies = [r for r in Transcript(home.transcript_path(team, "w")).records()
               if r.get("kind") == "message" and r["message"]["role"] == "assistant"]
    assert [r["usage"]["cache_read_input_tokens"] for r in replies] == [0, 90, 90, 90]
    assert [r["usage"]["cache_creation_input_tokens"] for r in replies] == [90, 0, 0, 0]
    assert all(r["usage"]["input_tokens"] == 100 and r["usage"]["output_tokens"] == 10 for r in replies)


def test_the_activity_record_is_rewritten_in_place_turn_after_turn(
        home: Home, team: str, workdir: Path, api: FakeAnthropicServer) -> None:
    """One file for the teammate's whole life (``fileio.InPlaceRecord``): no temp file and rename per turn."""
    env = {**os.environ, "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": api.base_url}
    api.enqueue(*(text_reply(f"turn {i}") for i in range(4)))
    spawn(home, SpawnRequest(team=team, name="w", prompt="start", cwd=workdir, backend="subprocess"), env)
    retry_until(lambda: _idles(home, team) == 1, 20, what="the first turn")
    record = home.activity_path(team, "w")
    first = record.stat()
    for i in range(3):
        Mailbox(home, team).send("w", f"go {i}", sender="team-lead")
        retry_until(lambda i=i: _idles(home, team) == i + 2, 20, what=f"turn {i}")
    now = record.stat()
    assert (now.st_ino, now.st_size) == (first.st_ino, first.st_size) and now.st_mtime_ns > first.st_mtime_ns
    written = json.loads(record.read_bytes())
    assert written["seq"] == written["seqEnd"] and written["status"] == "idle"
    assert sorted(p.name for p in record.parent.iterdir()) == ["w.json"]
