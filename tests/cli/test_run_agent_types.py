"""``swarm run``'s agent types as the model sees them: a listing attachment, coordinator mode, ``swarm agents``."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from swarm.agent.agent_listing import CHANGED, OPENING
from tests.fakes import FakeAnthropicServer
from tests.fakes.anthropic_server import text_reply, tool_use_reply
from tests.forked import run_swarm

pytestmark = pytest.mark.usefixtures("served")  # teammates forked from the home's CLI server (tests.zygote)

LATE = "---\\ndescription: Late reviewer added mid-run\\n---\\nYou review LATE things.\\n"


def _run(args: list[str], cwd: Path, api: FakeAnthropicServer, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": api.base_url, **extra}
    return run_swarm(["run", *args], cwd=cwd, env=env, timeout=60)


def _texts(message: dict[str, Any]) -> list[str]:
    return [b["text"] for b in message["content"] if isinstance(b, dict) and b.get("type") == "text"]


def test_a_definition_added_between_two_model_calls_leaves_the_tools_byte_identical(
        tmp_path: Path, api: FakeAnthropicServer) -> None:
    api.enqueue(tool_use_reply("Bash", {"command": f"mkdir -p .claude/agents && printf -- '{LATE}' > "
                                                   ".claude/agents/late.md"}),
                tool_use_reply("Agent", {"description": "late one", "prompt": "LATE JOB", "subagent_type": "late"},
                               tool_id="toolu_agent"),
                text_reply("reviewed late"), text_reply("done"))
    result = _run(["-p", "go"], tmp_path, api)
    assert result.returncode == 0, result.stderr
    first, second, child, last = (r.body for r in api.requests)
    assert json.dumps(first["tools"]) == json.dumps(second["tools"]) == json.dumps(last["tools"])
    assert "- Explore:" not in json.dumps(first["tools"]) and "Late reviewer" not in json.dumps(last["tools"])
    [listing] = [t for t in _texts(first["messages"][0]) if t.startswith(OPENING)]
    assert "- Explore:" in listing and "- Verification:" in listing and "- late:" not in listing
    [update] = [t for t in _texts(second["messages"][-1]) if t.startswith(CHANGED)]
    assert "- late: Late reviewer added mid-run (Tools: all tools)" in update
    assert not [t for t in _texts(last["messages"][-1]) if t.startswith((OPENING, CHANGED))]  # said once
    assert "You review LATE things." in json.dumps(child["system"])  # and the new type can be started at once
    assert "reviewed late" in json.dumps(last["messages"][-1])


def test_the_agent_tools_text_follows_the_mode_not_the_definitions(tmp_path: Path, api: FakeAnthropicServer) -> None:
    api.enqueue(text_reply("a"), text_reply("b"))
    assert _run(["-p", "go"], tmp_path, api).returncode == 0
    assert _run(["-p", "go"], tmp_path, api, SWARM_FORK_SUBAGENT="0").returncode == 0
    forks, no_forks = ({t["name"]: t for t in r.body["tools"]}["Agent"]["description"] for r in api.requests)
    assert "When to fork" in forks and "When to fork" not in no_forks and forks.startswith(no_forks)


COORDINATOR = "swarm's coordinator"
WORKER = "You are a worker started by a coordinator"


def test_coordinator_mode_orchestrates_background_workers_that_cannot_spawn_and_resume_on_send_message(
        tmp_path: Path, api: FakeAnthropicServer) -> None:
    # each time the worker ends only after the coordinator has asked for its turn's last reply, so the worker's news
    # opens a turn of its own (on a loaded host it would otherwise ride along with that request, and the replies shift)
    waiting, waiting_again = threading.Event(), threading.Event()
    api.enqueue(tool_use_reply("Agent", {"description": "first job", "prompt": "WORK ONE", "name": "w1"},
                               tool_id="toolu_c1"),
                replace(text_reply("waiting"), opens=waiting),
                tool_use_reply("SendMessage", {"to": "w1", "message": "MORE WORK"}, tool_id="toolu_c2"),
                replace(text_reply("waiting again"), opens=waiting_again), text_reply("all done"), when=COORDINATOR)
    api.enqueue(tool_use_reply("Agent", {"description": "sub", "prompt": "spawn deeper"}, tool_id="toolu_w1"),
                replace(text_reply("worker done"), gate=waiting),
                replace(text_reply("more done"), gate=waiting_again), when=WORKER)
    result = _run(["--coordinator", "-p", "orchestrate"], tmp_path, api)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "all done\n"
    coordinator = [r.body for r in api.requests if COORDINATOR in json.dumps(r.body["system"])]
    worker = [r.body for r in api.requests if WORKER in json.dumps(r.body["system"])]
    assert all([t["name"] for t in body["tools"]] == ["SendMessage", "Agent", "TaskStop"] for body in coordinator)
    agent_text = {t["name"]: t for t in coordinator[0]["tools"]}["Agent"]["description"]
    assert "When to fork" not in agent_text and "worker" in agent_text
    [listing] = [t for t in _texts(coordinator[0]["messages"][0]) if t.startswith(OPENING)]
    assert "- worker:" in listing and "- Explore:" not in listing and "- general-purpose:" not in listing
    assert "Async agent launched" in json.dumps(coordinator[1]["messages"][-1])  # no subagent_type: a worker
    names = [t["name"] for t in worker[0]["tools"]]
    assert "Agent" not in names and {"Bash", "Read", "Write", "Edit"} <= set(names)
    [refused] = [b for b in worker[1]["messages"][-1]["content"] if b.get("type") == "tool_result"]
    assert refused.get("is_error") and "Agent" in json.dumps(refused)  # a worker's Agent call is refused
    assert len(worker) == 3 and "MORE WORK" in json.dumps(worker[2]["messages"][-1])
    assert "worker done" in json.dumps(worker[2]["messages"])  # resumed with its earlier context
    assert "more done" in json.dumps(coordinator[-1]["messages"][-1])


def test_the_environment_switch_is_coordinator_mode_too(tmp_path: Path, api: FakeAnthropicServer) -> None:
    api.enqueue(tool_use_reply("Agent", {"description": "d", "prompt": "p", "subagent_type": "fork"}),
                text_reply("ok"))
    result = _run(["-p", "go"], tmp_path, api, CLAUDE_CODE_COORDINATOR_MODE="1")
    assert result.returncode == 0, result.stderr
    assert [t["name"] for t in api.requests[0].body["tools"]] == ["SendMessage", "Agent", "TaskStop"]
    assert "forking is off" in json.dumps(api.requests[1].body["messages"][-1])  # no forks in this mode
