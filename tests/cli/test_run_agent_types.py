"""``swarm run``'s agent types as the model sees them: a listing attachment, coordinator mode, ``swarm agents``."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from swarm.agent.agent_listing import CHANGED, OPENING
from tests.cli.conftest import SWARM_EXE
from tests.fakes import FakeAnthropicServer
from tests.fakes.anthropic_server import text_reply, tool_use_reply

LATE = "---\\ndescription: Late reviewer added mid-run\\n---\\nYou review LATE things.\\n"


def _run(args: list[str], cwd: Path, api: FakeAnthropicServer, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": api.base_url, **extra}
    return subprocess.run([str(SWARM_EXE), "run", *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=60)


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
