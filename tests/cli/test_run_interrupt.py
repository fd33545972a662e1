"""Ctrl-C during `swarm run`: the agent stops after its current step and the transcript stays consistent."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import replace
from pathlib import Path

from tests.backends.helpers import retry_until
from tests.cli.conftest import SWARM_EXE
from tests.fakes import FakeAnthropicServer
from tests.fakes.anthropic_server import text_reply

PLAYBOOK = r"""
[[rules]]
match = 'work'
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "touch started && sleep 2 && touch finished" } }]
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "touch second-step" } }]
[[rules.steps]]
text = "all done"
"""


def test_first_sigint_stops_after_the_current_step(tmp_path: Path) -> None:
    playbook = tmp_path / "play.toml"
    playbook.write_text(PLAYBOOK)
    transcript = tmp_path / "t.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    proc = subprocess.Popen([str(SWARM_EXE), "run", "-p", "work", "--playbook", str(playbook),
                             "--transcript", str(transcript), "--allow-writes-outside-cwd"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        retry_until(lambda: (tmp_path / "started").exists(), 15, what="the first step to start")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (tmp_path / "finished").exists()  # the running step was allowed to finish
    assert not (tmp_path / "second-step").exists()  # no step after the interrupt
    assert proc.returncode == 1 and out == ""
    assert "stopping after the current step" in err and "interrupted" in err
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    blocks = [b for r in records if r["kind"] == "message" for b in r["message"]["content"]]
    uses = [b["id"] for b in blocks if b["type"] == "tool_use"]
    results = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
    assert uses == results and len(uses) == 1


def test_sigterm_cuts_the_models_streaming_answer_short(tmp_path: Path, api: FakeAnthropicServer) -> None:
    """SIGTERM (as Esc in a session, or Ctrl-C in a teammate's pane) interrupts the step that runs: an answer the
    model is still writing is abandoned, its connection closed, rather than read to its end."""
    api.enqueue(replace(text_reply("word " * 200), pace=0.05))  # ~150 events: ~7.5 s read to the end
    transcript = tmp_path / "t.jsonl"
    env = {**os.environ, "ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": api.base_url}
    proc = subprocess.Popen([str(SWARM_EXE), "run", "-p", "talk at length", "--transcript", str(transcript)],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        retry_until(lambda: len(api.requests) == 1, 30, what="the model request")
        time.sleep(0.3)  # a few words in
        began = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert time.monotonic() - began < 4.0, err  # not the ~7 s left of the answer
    assert proc.returncode != 0 and "interrupted while the model answered" in err, err
    retry_until(lambda: api.abandoned == 1, 10, what="the server to see the connection closed")
    assert len(api.requests) == 1  # no retry
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    messages = [r["message"] for r in records if r["kind"] == "message"]
    assert [m["role"] for m in messages] == ["user"]  # the cut answer is not recorded as the model's
