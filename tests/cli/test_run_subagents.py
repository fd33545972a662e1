"""`swarm run` with subagents: Ctrl-C during a synchronous child stops both, transcripts whole; `--agent`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

from swarm.agent.conversation import Conversation
from swarm.agent.transcript import Transcript
from swarm.models.anthropic_provider import build_params
from swarm.models.base import ModelRequest
from tests.backends.helpers import retry_until
from tests.cli.conftest import SWARM_EXE
from tests.fakes.anthropic_server import conversation_error

PLAYBOOK = r"""
[[rules]]
match = 'parentwork'
[[rules.steps]]
tool_calls = [{ name = "Agent", input = { description = "child job", prompt = "childwork", subagent_type = "general-purpose" } }]
[[rules.steps]]
text = "parent done"

[[rules]]
match = 'childwork'
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "touch child-started && sleep 2 && touch child-finished" } }]
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "touch child-second" } }]
[[rules.steps]]
text = "child done"

[[rules]]
match = 'whoami'
system = 'You review code'
text = "I am the reviewer"
"""


def _sendable(path: Path) -> None:
    messages = Transcript(path).messages()
    params = build_params("m", ModelRequest(system="", messages=messages, tools=[], max_tokens=10))
    assert conversation_error(params["messages"]) is None, path
    assert Conversation.resume(Transcript(path)).messages == messages  # nothing left to repair


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}


def test_sigint_during_a_sync_subagent_stops_both_after_their_current_step(tmp_path: Path) -> None:
    playbook = tmp_path / "play.toml"
    playbook.write_text(PLAYBOOK)
    transcript = tmp_path / "t.jsonl"
    proc = subprocess.Popen([str(SWARM_EXE), "run", "-p", "parentwork", "--playbook", str(playbook),
                             "--transcript", str(transcript)],
                            cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        retry_until(lambda: (tmp_path / "child-started").exists(), 15, what="the child's first step")
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1 and "interrupted" in err and out == ""
    assert (tmp_path / "child-finished").exists() and not (tmp_path / "child-second").exists()
    _sendable(transcript)
    [link] = Transcript(transcript).events("subagent")
    child = Path(link["transcript"])
    assert child.parent == tmp_path / "t.subagents"
    _sendable(child)
    assert [r for r in Transcript(child).events("stop")][0]["reason"] == "interrupted"


def test_run_as_a_definition_uses_its_prompt(tmp_path: Path) -> None:
    playbook = tmp_path / "play.toml"
    playbook.write_text(PLAYBOOK)
    agents = json.dumps({"reviewer": {"description": "reviews", "prompt": "You review code carefully."}})
    done = subprocess.run([str(SWARM_EXE), "run", "-p", "whoami", "--playbook", str(playbook), "--agent", "reviewer",
                           "--agents", agents], cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "I am the reviewer"
    unknown = subprocess.run([str(SWARM_EXE), "run", "-p", "x", "--agent", "nobody"], cwd=tmp_path, env=_env(),
                             capture_output=True, text=True, timeout=60)
    assert unknown.returncode == 2 and unknown.stderr.count("\n") == 1 and "swarm agents" in unknown.stderr


def test_a_definitions_unknown_skills_are_named_with_its_file_for_the_main_agent_and_a_subagent(
        tmp_path: Path) -> None:
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    lead, child = agents / "leader.md", agents / "helper.md"
    lead.write_text("---\ndescription: leads\nskills: [no-such-lead-skill]\n---\nYou lead.\n")
    child.write_text("---\ndescription: helps\nskills: [no-such-child-skill]\n---\nYou help.\n")
    playbook = tmp_path / "play.toml"
    playbook.write_text(PLAYBOOK.replace('subagent_type = "general-purpose"', 'subagent_type = "helper"')
                        .replace("touch child-started && sleep 2 && ", ""))
    done = subprocess.run([str(SWARM_EXE), "run", "-p", "parentwork", "--playbook", str(playbook), "--agent", "leader"],
                          cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "parent done"
    warnings = [line for line in done.stderr.splitlines() if "no such skill" in line]
    assert [w.split(" (known")[0] for w in warnings] == [
        f"swarm: warning: {lead}: skills: no-such-lead-skill: no such skill",
        f"swarm: warning: {child}: skills: no-such-child-skill: no such skill"]
