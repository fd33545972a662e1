"""The live events file: bounded by rotation, read incrementally across a rotation, never stopping the agent."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from swarm.agent.live_events import EventLog, EventReader, LiveEvent, rotated


def test_the_file_is_rotated_at_its_bound_and_a_reader_loses_nothing_across_the_rotation(tmp_path: Path) -> None:
    path = tmp_path / "events" / "ann.jsonl"
    log = EventLog(path, max_bytes=2000)
    reader = EventReader(path)
    seen: list[str] = []
    for i in range(200):
        log.emit(LiveEvent(type="note", text=f"event {i:03d} " + "x" * 40))
        if i % 7 == 0:
            seen += [e.text or "" for e in reader.read()]
    seen += [e.text or "" for e in reader.read()]
    reader.close()
    assert [t.split()[1] for t in seen] == [f"{i:03d}" for i in range(200)]  # in order, none lost or twice
    assert path.stat().st_size < 2000 + 200 and rotated(path).stat().st_size < 2000 + 200  # about 2x the bound
    kept = EventReader(path).history()
    assert kept[-1].text and kept[-1].text.startswith("event 199") and len(kept) < 200


def test_a_half_written_line_waits_and_a_torn_one_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "ann.jsonl"
    log = EventLog(path)
    log.emit(LiveEvent(type="note", text="one"))
    reader = EventReader(path)
    assert [e.text for e in reader.read()] == ["one"]
    with open(path, "ab") as handle:
        handle.write(b'{"type": "note", "te')  # a writer mid-line (or killed there)
    assert reader.read() == []
    log.emit(LiveEvent(type="note", text="two"))  # the next append starts a fresh line
    assert [e.text for e in reader.read()] == ["two"]


def test_a_file_that_cannot_be_written_does_not_stop_the_agent(tmp_path: Path,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "ann.jsonl"
    os.mkdir(path)  # something planted in its place
    with caplog.at_level(logging.WARNING, logger="swarm.agent.live_events"):
        event = EventLog(path).emit(LiveEvent(type="note", text="still running"))  # logged, not raised
    assert event.text == "still running" and event.ts  # stamped and handed back as if written
    assert path.is_dir() and not any(path.iterdir())  # the planted directory is left as it was
    assert [r.getMessage() for r in caplog.records] == ["live event not written"]
