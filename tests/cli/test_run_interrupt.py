"""Ctrl-C during `swarm run`: the agent stops after its current step and the transcript stays consistent."""

from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import replace
from pathlib import Path

from tests.backends.helpers import retry_until
from tests.cli.conftest import run_and_signal
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
    ended = run_and_signal(["run", "-p", "work", "--playbook", str(playbook), "--transcript", str(transcript),
                            "--allow-writes-outside-cwd"], tmp_path, env, (tmp_path / "started").exists,
                           signal.SIGINT, what="the first step to start")
    assert (tmp_path / "finished").exists()  # the running step was allowed to finish
    assert not (tmp_path / "second-step").exists()  # no step after the interrupt
    assert ended.returncode == 1 and ended.out == ""
    assert "stopping after the current step" in ended.err and "interrupted" in ended.err
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
    def a_few_words_in() -> bool:
        if not api.requests:
            return False
        time.sleep(0.3)
        return True

    ended = run_and_signal(["run", "-p", "talk at length", "--transcript", str(transcript)], tmp_path, env,
                           a_few_words_in, signal.SIGTERM, what="the model request")
    assert ended.took < 4.0, ended.err  # not the ~7 s left of the answer
    assert ended.returncode != 0 and "interrupted while the model answered" in ended.err, ended.err
    retry_until(lambda: api.abandoned == 1, 10, what="the server to see the connection closed")
    assert len(api.requests) == 1  # no retry
    records = [json.loads(line) for line in transcript.read_text().splitlines()]
    messages = [r["message"] for r in records if r["kind"] == "message"]
    assert [m["role"] for m in messages] == ["user"]  # the cut answer is not recorded as the model's
