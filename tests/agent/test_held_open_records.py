"""A teammate's transcript and events file are held open (``core.jsonl.Appender``): counted opens per record."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from swarm.agent.live_events import EventLog, LiveEvent, rotated
from swarm.agent.transcript import Transcript
from swarm.core.jsonl import read_records
from swarm.models.messages import Message
from tests.conftest import OpenLog


def test_a_teammate_transcript_and_events_open_their_files_once(tmp_path: Path, os_calls: Counter[str],
                                                                open_log: OpenLog) -> None:
    transcript = Transcript(tmp_path / "transcripts" / "mate.jsonl")
    events = EventLog(tmp_path / "events" / "mate.jsonl")
    with open_log.recording() as opened:
        for n in range(20):  # what a ping costs them: busy, the delivery line and its owed fsync, the answer
            events.emit(LiveEvent(type="state", state="busy"))
            transcript.message(Message.user_text(f"ping {n}"), delivered=[f"k{n}"], sync_later=True)
            transcript.sync()  # paid on a dup of the held descriptor, not by opening the path
            events.emit(LiveEvent(type="text", text=f"pong {n}", final=True))
            transcript.turn_end("end_turn")
    assert sorted(opened) == sorted([str(transcript.path), str(events.path)])  # was one open per record and sync
    assert os_calls["fsync"] == 20
    assert len(transcript.records()) == 40 and len(read_records(tmp_path / "events" / "mate.jsonl")) == 40


def test_events_rotate_at_their_bound_with_the_file_held(tmp_path: Path, open_log: OpenLog) -> None:
    path = tmp_path / "events" / "mate.jsonl"
    log = EventLog(path, max_bytes=1000)
    with open_log.recording() as opened:
        for n in range(60):
            log.emit(LiveEvent(type="note", text=f"event {n:02d} " + "x" * 40))
    rotations = len(opened) - 1  # one open for the first file, one after each rotation
    assert rotations >= 2 and path.stat().st_size < 1000 + 200 and rotated(path).stat().st_size >= 1000
    texts = [r["text"][6:8] for r in read_records(rotated(path)) + read_records(path)]
    assert texts == sorted(texts) and texts[-1] == "59"  # the newest kept, in order
    rotated(path).unlink()
    path.rename(rotated(path))  # a reader's tool (or a person) rotated it under the writer
    log.emit(LiveEvent(type="note", text="after"))
    assert [r["text"] for r in read_records(path)] == ["after"]
