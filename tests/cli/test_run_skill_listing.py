"""``swarm run``'s skills as the model sees them: a listing attachment (``swarm.agent.agent_listing``), not the
Skill tool's text, so a skill added mid-session leaves the tools part of every request byte-identical, is told in
the next request, and can be used at once. Through the real SDK against the fake API."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from swarm.agent.agent_listing import SKILLS_CHANGED, SKILLS_OPENING
from tests.fakes import FakeAnthropicServer
from tests.fakes.anthropic_server import text_reply, tool_use_reply
from tests.forked import run_swarm

LATE = "---\\nname: late\\ndescription: Late skill added mid-run\\n---\\nSay LATE-BODY-4127.\\n"
WRITE_LATE = "mkdir -p .claude/skills/late && printf -- '" + LATE + "' > .claude/skills/late/SKILL.md"


def _run(cwd: Path, api: FakeAnthropicServer) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": api.base_url}
    return run_swarm(["run", "-p", "go"], cwd=cwd, env=env, timeout=60)


def _texts(message: dict[str, Any]) -> list[str]:
    return [b["text"] for b in message["content"] if isinstance(b, dict) and b.get("type") == "text"]


def _listed(message: dict[str, Any], opening: str) -> list[str]:
    return [t for t in _texts(message) if t.startswith(opening)]


def _early_skill(root: Path) -> None:
    folder = root / ".claude" / "skills" / "early"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: early\ndescription: Early skill\n---\nSay EARLY.\n")


def _script(api: FakeAnthropicServer) -> None:
    api.enqueue(tool_use_reply("Bash", {"command": WRITE_LATE}),
                tool_use_reply("Skill", {"skill": "late"}, tool_id="toolu_skill"),
                text_reply("used late"))


def test_a_skill_added_between_two_model_calls_leaves_the_tools_byte_identical_and_can_be_used(
        tmp_path: Path, api: FakeAnthropicServer) -> None:
    _early_skill(tmp_path)
    _script(api)
    result = _run(tmp_path, api)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "used late\n"
    first, second, last = (r.body for r in api.requests)
    assert json.dumps(first["tools"]) == json.dumps(second["tools"]) == json.dumps(last["tools"])
    assert "Early skill" not in json.dumps(first["tools"]) and "Late skill" not in json.dumps(last["tools"])
    [listing] = _listed(first["messages"][0], SKILLS_OPENING)
    assert "- early: Early skill" in listing and "- late" not in listing
    [update] = _listed(second["messages"][-1], SKILLS_CHANGED)
    assert "- early: Early skill" in update and "- late: Late skill added mid-run" in update
    assert not _listed(last["messages"][-1], SKILLS_CHANGED)  # said once
    [used] = [b for b in last["messages"][-1]["content"] if b.get("type") == "tool_result"]
    assert not used.get("is_error") and "Say LATE-BODY-4127." in json.dumps(used)  # the new skill ran


def test_without_skills_at_the_start_the_list_is_first_told_when_one_appears(
        tmp_path: Path, api: FakeAnthropicServer) -> None:
    _script(api)
    result = _run(tmp_path, api)
    assert result.returncode == 0, result.stderr
    first, second, last = (r.body for r in api.requests)
    assert json.dumps(first["tools"]) == json.dumps(last["tools"])
    assert not _listed(first["messages"][0], SKILLS_OPENING)  # nothing to tell yet
    [told] = _listed(second["messages"][-1], SKILLS_OPENING)
    assert "- late: Late skill added mid-run" in told
    [used] = [b for b in last["messages"][-1]["content"] if b.get("type") == "tool_result"]
    assert not used.get("is_error") and "Say LATE-BODY-4127." in json.dumps(used)
