"""`swarm run` with subagents: Ctrl-C during a synchronous child stops both, transcripts whole; `--agent`."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from swarm.agent.conversation import Conversation
from swarm.agent.transcript import Transcript
from swarm.models.api_shapes import build_params
from swarm.models.base import ModelRequest
from tests.cli.conftest import Signalled, run_and_signal
from tests.fakes.anthropic_server import conversation_error
from tests.forked import run_swarm

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


def _parent_signalled(tmp_path: Path, playbook: str, signum: int) -> Signalled:
    """``swarm run -p parentwork`` on ``playbook``, sent ``signum`` once its child's command has started."""
    (tmp_path / "play.toml").write_text(playbook)
    return run_and_signal(["run", "-p", "parentwork", "--playbook", str(tmp_path / "play.toml"), "--transcript",
                           str(tmp_path / "t.jsonl")], tmp_path, _env(), (tmp_path / "child-started").exists,
                          signum, what="the child's first step", timeout=45)


def test_sigint_during_a_sync_subagent_stops_both_after_their_current_step(tmp_path: Path) -> None:
    ended = _parent_signalled(tmp_path, PLAYBOOK, signal.SIGINT)
    assert ended.returncode == 1 and "interrupted" in ended.err and ended.out == ""
    assert (tmp_path / "child-finished").exists() and not (tmp_path / "child-second").exists()
    transcript = tmp_path / "t.jsonl"
    _sendable(transcript)
    [link] = Transcript(transcript).events("subagent")
    child = Path(link["transcript"])
    assert child.parent == tmp_path / "t.subagents"
    _sendable(child)
    assert [r for r in Transcript(child).events("stop")][0]["reason"] == "interrupted"


def test_sigterm_during_a_sync_subagent_kills_the_childs_running_command(tmp_path: Path) -> None:
    """SIGTERM interrupts what runs now (as Ctrl-C in a session or a pane): the child's command too, not only the
    parent's, and the child's transcript is as whole as after a stop between steps."""
    ended = _parent_signalled(tmp_path, PLAYBOOK.replace("sleep 2", "sleep 60"), signal.SIGTERM)
    assert ended.took < 10, ended.err  # not the child's 60 s sleep
    assert ended.returncode == 1 and "interrupted" in ended.err and ended.out == ""
    assert not (tmp_path / "child-finished").exists() and not (tmp_path / "child-second").exists()
    transcript = tmp_path / "t.jsonl"
    [link] = Transcript(transcript).events("subagent")
    child = Path(link["transcript"])
    _sendable(transcript)
    _sendable(child)
    assert "interrupted" in json.dumps(Transcript(child).messages()[-1].model_dump())  # its command's result


def test_run_as_a_definition_uses_its_prompt(tmp_path: Path) -> None:
    playbook = tmp_path / "play.toml"
    playbook.write_text(PLAYBOOK)
    agents = json.dumps({"reviewer": {"description": "reviews", "prompt": "You review code carefully."}})
    done = run_swarm(["run", "-p", "whoami", "--playbook", str(playbook), "--agent", "reviewer", "--agents", agents],
                     cwd=tmp_path, env=_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "I am the reviewer"
    unknown = run_swarm(["run", "-p", "x", "--agent", "nobody"], cwd=tmp_path, env=_env(), timeout=60)
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
    done = run_swarm(["run", "-p", "parentwork", "--playbook", str(playbook), "--agent", "leader"], cwd=tmp_path,
                     env=_env(), timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "parent done"
    warnings = [line for line in done.stderr.splitlines() if "no such skill" in line]
    assert [w.split(" (known")[0] for w in warnings] == [
        f"swarm: warning: {lead}: skills: no-such-lead-skill: no such skill",
        f"swarm: warning: {child}: skills: no-such-child-skill: no such skill"]


LIMITS = r"""
[[rules]]
match = 'spawn it'
on = "prompt"
tool_calls = [{ name = "Agent", input = { description = "gp job", prompt = "CHILDTASK", subagent_type = "general-purpose" } }]

[[rules]]
match = 'remember it'
on = "prompt"
tool_calls = [{ name = "Write", input = { file_path = "{memory}", content = "- the build needs make\n" } }]

[[rules]]
match = 'touch it'
on = "prompt"
tool_calls = [{ name = "Bash", input = { command = "touch planned.txt" } }]

[[rules]]
match = 'CHILDTASK'
on = "prompt"
text = "child ran"

[[rules]]
on = "tool_result"
text = "saw: {incoming}"
"""

DEFINITIONS = {
    "boss.md": "---\ndescription: may start only Explore\ntools: Agent(Explore), Read\n---\nYou are the boss.\n",
    "memo.md": "---\ndescription: remembers\nmemory: user\n---\nYou remember things.\n",
}


def _run_as(tmp_path: Path, agent: str, prompt: str) -> str:
    (tmp_path / ".claude" / "agents").mkdir(parents=True, exist_ok=True)
    for name, text in DEFINITIONS.items():
        (tmp_path / ".claude" / "agents" / name).write_text(text)
    memory = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "agent-memory" / "memo" / "MEMORY.md"
    playbook = tmp_path / "limits.toml"
    playbook.write_text(LIMITS.replace("{memory}", str(memory)))
    done = run_swarm(["run", "-p", prompt, "--playbook", str(playbook), "--agent", agent], cwd=tmp_path, env=_env(),
                     timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_definitions_agent_types_limit_what_swarm_run_may_start(tmp_path: Path) -> None:
    answer = _run_as(tmp_path, "boss", "spawn it")
    assert answer == "saw: agent type 'general-purpose' is not allowed here; available: Explore"


def test_swarm_run_as_a_definition_with_memory_writes_it_without_asking(tmp_path: Path) -> None:
    answer = _run_as(tmp_path, "memo", "remember it")
    memory = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "agent-memory" / "memo" / "MEMORY.md"
    assert answer.startswith("saw: ") and memory.read_text() == "- the build needs make\n", answer


def test_swarm_run_as_plan_runs_only_read_only_commands(tmp_path: Path) -> None:
    answer = _run_as(tmp_path, "Plan", "touch it")
    assert "read-only" in answer and "touch is not a read-only command" in answer
    assert not (tmp_path / "planned.txt").exists()
