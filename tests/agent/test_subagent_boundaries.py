"""What a definition allows, wherever it is applied, and what a child may not touch of its parent's.

Over the real SDK against the fake Messages API: ``Agent(Explore)`` limits a
main agent's spawns, a fork cannot read or stop its parent's background
agents, Explore's Bash only reads, a main agent's memory is writable, a
fork runs on its parent's model whatever the call asks.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from swarm.agent.background import BackgroundAgents, QueueSink
from swarm.agent.definitions import load_agents
from swarm.agent.read_only import read_only_refusal
from swarm.agent.subagents import AgentHost, plan_definition
from swarm.agent.tools import core_tools
from swarm.agent.tool_api.base import Tool
from swarm.agent.tool_api.context import AgentIdentity, ToolContext
from swarm.agent.tool_api.inputs import ToolInput
from swarm.models.scripted import ScriptedProvider
from tests.agent.subagent_helpers import (
    PARENT,
    last_results,
    run_main,
    tool_names,
    with_text,
    without_text,
)
from tests.fakes import FakeAnthropicServer, text_reply, tool_use_reply

BOSS = json.dumps({"boss": {"description": "may only start Explore", "prompt": "You are the boss.",
                            "tools": ["Agent(Explore)", "Read"]}})


def test_agent_types_in_a_main_agents_tools_limit_what_it_may_start(api: FakeAnthropicServer,
                                                                   tmp_path: Path) -> None:
    api.enqueue(tool_use_reply("Agent", {"description": "gp", "prompt": "GP JOB", "subagent_type": "general-purpose"},
                               tool_id="toolu_gp"),
                tool_use_reply("Agent", {"description": "look", "prompt": "EXPLORE JOB", "subagent_type": "Explore"},
                               tool_id="toolu_ex"),
                text_reply("boss done"), when=PARENT)
    api.enqueue(text_reply("explored"), when="EXPLORE JOB")
    result = run_main(api, tmp_path, agents_json=BOSS, agent="boss")
    assert result.text == "boss done"
    parents = with_text(api, PARENT)
    assert tool_names(parents[0]) == ["Read", "Agent"]
    [refused] = last_results(parents[1])
    assert refused["is_error"]
    assert refused["content"] == "agent type 'general-purpose' is not allowed here; available: Explore"
    [explored] = last_results(parents[2])
    assert not explored["is_error"] and "explored" in explored["content"]
    [child] = without_text(api, PARENT)  # only Explore ran
    assert "EXPLORE JOB" in json.dumps(child.body["messages"])


def _three_calls(*calls: tuple[str, dict[str, Any]]) -> Any:
    reply = tool_use_reply(calls[0][0], calls[0][1], tool_id="toolu_c0")
    for index, (name, args) in enumerate(calls[1:], start=1):
        reply.body["content"].append({"type": "tool_use", "id": f"toolu_c{index}", "name": name, "input": args})
    return reply


def test_a_fork_cannot_read_stop_or_message_its_parents_background_agent(api: FakeAnthropicServer,
                                                                         tmp_path: Path) -> None:
    api.enqueue(_three_calls(("TaskStop", {"task_id": "bgjob"}), ("TaskOutput", {"task_id": "bgjob", "block": False}),
                             ("SendMessage", {"to": "bgjob", "message": "stop working"})),
                text_reply("Scope: meddling\nResult: refused"), when="Your directive: MEDDLE")
    api.enqueue(tool_use_reply("Agent", {"description": "slow job", "prompt": "SLOW JOB", "name": "bgjob",
                                         "subagent_type": "general-purpose", "run_in_background": True}),
                tool_use_reply("Agent", {"description": "meddle", "prompt": "MEDDLE"}, tool_id="toolu_fork"),
                replace(text_reply("waiting"), opens=(waiting := threading.Event())), text_reply("all done"),
                when=PARENT)
    # still running while the fork meddles: it ends only once the parent has asked for its "waiting"
    api.enqueue(replace(text_reply("SLOW RESULT"), gate=waiting), when="SLOW JOB")
    result = run_main(api, tmp_path)
    assert result.text == "all done"
    fork = with_text(api, "Your directive: MEDDLE")
    refusals = last_results(fork[1])
    assert len(fork) == 2 and [r["is_error"] for r in refusals] == [True, True, True]
    assert "TaskStop is for the main agent only" in refusals[0]["content"]
    assert "TaskOutput is for the main agent only" in refusals[1]["content"]
    assert "no subagent named 'bgjob'" in refusals[2]["content"]
    final = json.dumps(with_text(api, PARENT)[-1].body["messages"][-1])
    assert "<status>completed</status>" in final and "SLOW RESULT" in final
    [child] = [r for r in without_text(api, PARENT) if "SLOW JOB" in json.dumps(r.body)]
    assert "stop working" not in json.dumps(child.body)  # one round, and nothing reached it


def test_an_explore_childs_bash_runs_only_commands_that_read(api: FakeAnthropicServer, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    api.enqueue(tool_use_reply("Agent", {"description": "look", "prompt": "EXPLORE JOB", "subagent_type": "Explore"}),
                text_reply("parent done"), when=PARENT)
    api.enqueue(tool_use_reply("Bash", {"command": "touch made.txt && echo wrote"}, tool_id="toolu_touch"),
                tool_use_reply("Bash", {"command": "cat notes.txt | wc -l"}, tool_id="toolu_cat"),
                text_reply("looked"), when="EXPLORE JOB")
    run_main(api, tmp_path)
    child = without_text(api, PARENT)
    [touch] = last_results(child[1])
    assert touch["is_error"] and "read-only" in touch["content"] and "touch is not a read-only command" in touch[
        "content"]
    [cat] = last_results(child[2])
    assert not cat["is_error"] and "1" in cat["content"]
    assert not (tmp_path / "made.txt").exists()


@pytest.mark.parametrize(("command", "refused"), [
    ("ls -la src", None),
    ("grep -rn 'def main' . | head -20", None),
    ("find . -name '*.py' -type f", None),
    ("git log --oneline -5 && git status", None),
    ("git -C sub diff HEAD~1", None),
    ("sed -n 10,20p a.py", None),
    ("sort -k2 a.txt | uniq -c", None),
    ("touch x", "touch is not a read-only command"),
    ("echo hi > x", "redirection"),
    ("cat a.txt | tee b.txt", "tee is not a read-only command"),
    ("find . -name x -delete", "find -delete"),
    ("find . -exec rm {} ;", "runs another command"),
    ("git commit -am wip", "git commit"),
    ("git branch -D main", "git branch"),
    ("git stash", "git stash"),
    ("git -c core.pager=sh log", "git options before the subcommand"),
    ("git log --output=x", "writes a file"),
    ("sed -i s/a/b/ a.py", "sed -i"),
    ("sed s/a/b/w out a.py", "sed script"),
    ("sort -uo out a.txt", "-uo"),
    ("uniq a.txt b.txt", "operand"),
    ("env rm x", "runs another command"),
    ("ls $(rm x)", "substitution"),
    ("python3 -c 'print(1)'", "python3 is not a read-only command"),
])
def test_read_only_commands(command: str, refused: str | None) -> None:
    why = read_only_refusal(command)
    assert why is None if refused is None else why is not None and refused in why, why


class _NoInput(ToolInput):
    pass


class _ExitPlanMode(Tool[_NoInput]):
    """A stand-in for the teammate's ExitPlanMode: only its name matters to the tool pool."""

    name = "ExitPlanMode"
    description = "leave plan mode"
    input_model = _NoInput

    def run(self, args: _NoInput, ctx: ToolContext) -> str:
        return "ok"


def test_a_child_in_plan_mode_keeps_exit_plan_mode(tmp_path: Path) -> None:
    env = {"CLAUDE_CONFIG_DIR": os.environ["CLAUDE_CONFIG_DIR"]}
    agents = json.dumps({"planner": {"description": "plans", "permissionMode": "plan"},
                         "doer": {"description": "does"}})
    host = AgentHost(catalog=load_agents(tmp_path, env=env, cli_json=agents), env=env, model="scripted",
                     make_provider=lambda _: ScriptedProvider(), make_tools=lambda: [*core_tools(), _ExitPlanMode()],
                     transcript_dir=tmp_path, background=BackgroundAgents(QueueSink()))
    names = {}
    for kind in ("planner", "doer"):
        definition = host.catalog.get(kind)
        assert definition is not None
        plan = plan_definition(host, ToolContext(AgentIdentity(cwd=tmp_path)), definition, prompt="p", description="d", model=None,
                               background=False, cwd=None, name=None)
        names[kind] = [t.name for t in plan.tools]
    assert "ExitPlanMode" in names["planner"] and "ExitPlanMode" not in names["doer"]


def test_a_fork_runs_on_its_parents_model_whatever_the_call_or_the_environment_asks(
        api: FakeAnthropicServer, tmp_path: Path) -> None:
    api.enqueue(text_reply("Scope: f\nResult: done"), when="Your directive: FORKED")
    api.enqueue(tool_use_reply("Agent", {"description": "f", "prompt": "FORKED", "model": "haiku"}),
                text_reply("parent done"), when=PARENT)
    run_main(api, tmp_path, SWARM_SUBAGENT_MODEL="claude-env-model", SWARM_MODEL_HAIKU="claude-haiku-test")
    fork = with_text(api, "Your directive: FORKED")[0]
    assert fork.body["model"] == "claude-parent"
    [agent] = [t for t in api.requests[0].body["tools"] if t["name"] == "Agent"]
    assert "ignores it and always runs on your model" in agent["input_schema"]["properties"]["model"]["description"]


def test_a_main_agent_writes_its_definitions_memory_without_leaving_its_roots(api: FakeAnthropicServer,
                                                                            tmp_path: Path) -> None:
    memo = json.dumps({"memo": {"description": "remembers", "prompt": "You remember.", "memory": "user"}})
    index = Path(os.environ["CLAUDE_CONFIG_DIR"]) / "agent-memory" / "memo" / "MEMORY.md"
    elsewhere = tmp_path.parent / f"{tmp_path.name}-elsewhere.txt"
    api.enqueue(tool_use_reply("Write", {"file_path": str(index), "content": "- learned a thing\n"}, tool_id="toolu_m"),
                tool_use_reply("Write", {"file_path": str(elsewhere), "content": "no\n"}, tool_id="toolu_x"),
                text_reply("remembered"))
    work = tmp_path / "work"
    work.mkdir()
    run_main(api, work, agents_json=memo, agent="memo")
    [wrote] = last_results(api.requests[1])
    [outside] = last_results(api.requests[2])
    assert not wrote["is_error"] and index.read_text() == "- learned a thing\n"
    assert outside["is_error"] and not elsewhere.exists()
    assert "you need no permission for this directory" in json.dumps(api.requests[0].body["system"])
