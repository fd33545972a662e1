"""``swarm run -p`` as a user runs it: the installed executable, the real SDK, a fake API."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.fakes import FakeAnthropicServer
from tests.fakes.anthropic_server import ScriptedReply, error_reply, message_json, text_reply, tool_use_reply
from tests.forked import run_swarm

pytestmark = pytest.mark.usefixtures("served")  # teammates forked from the home's CLI server (tests.zygote)


def _run(args: list[str], cwd: Path, env_extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **env_extra}
    return run_swarm(["run", *args], cwd=cwd, env=env, timeout=60)


def test_prints_exactly_the_final_text(tmp_path: Path, api: FakeAnthropicServer) -> None:
    (tmp_path / "a.txt").write_text("42\n")
    api.enqueue(tool_use_reply("Read", {"file_path": "a.txt"}, text="Let me look."),
                text_reply("The answer is 42."))
    result = _run(["-p", "what is in a.txt?"], tmp_path,
                  {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": api.base_url})
    assert result.returncode == 0, result.stderr
    assert result.stdout == "The answer is 42.\n"
    assert "42" in api.requests[1].body["messages"][-1]["content"][0]["content"]


def test_max_turns_exit_code_and_message(tmp_path: Path, api: FakeAnthropicServer) -> None:
    for i in range(3):
        api.enqueue(tool_use_reply("Glob", {"pattern": "*"}, tool_id=f"toolu_{i}"))
    result = _run(["-p", "go", "--max-turns", "1"], tmp_path,
                  {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": api.base_url})
    assert result.returncode == 1
    assert result.stdout == ""
    assert "max_turns" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_auth_failure_is_one_clear_line(tmp_path: Path, api: FakeAnthropicServer) -> None:
    api.enqueue(error_reply(401, "authentication_error", "invalid x-api-key"))
    result = _run(["-p", "hi"], tmp_path, {"ANTHROPIC_API_KEY": "bad", "ANTHROPIC_BASE_URL": api.base_url})
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("swarm: error:") and "401" in lines[0]
    assert len(api.requests) == 1


def test_offline_default_without_api_key(tmp_path: Path) -> None:
    result = _run(["-p", "hello offline"], tmp_path, {})
    assert result.returncode == 0
    assert "hello offline" in result.stdout


def test_without_a_key_or_playbook_swarm_run_says_it_runs_the_echoing_offline_model(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    done = run_swarm(["run", "-p", "list the files"], cwd=tmp_path, env=env, timeout=60)
    assert done.returncode == 0
    assert "offline scripted model" in done.stderr and "ANTHROPIC_API_KEY" in done.stderr
    assert done.stdout.startswith("Received:")


def test_a_refusal_exits_non_zero_with_one_line_that_says_so(tmp_path: Path, api: FakeAnthropicServer) -> None:
    api.enqueue(ScriptedReply(200, message_json([], stop_reason="refusal")))
    result = _run(["-p", "something the model will not do"], tmp_path,
                  {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": api.base_url})
    assert result.returncode == 1 and result.stdout == ""
    assert "refusal" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_the_main_agent_of_swarm_run_is_a_lead_told_how_its_team_works(tmp_path: Path, api: FakeAnthropicServer) -> None:
    api.enqueue(text_reply("hello"))
    result = _run(["-p", "hi"], tmp_path, {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": api.base_url})
    assert result.returncode == 0, result.stderr
    body = api.requests[0].body
    system = body["system"][0]["text"]
    assert f"Model: {body['model']}" in system and "Shell: " in system and "# Git" in system
    assert "# Leading a team" in system and "[idle]" in system and "shutdown_request" in system


def test_effort_flag_asks_the_model_to_think(tmp_path: Path, api: FakeAnthropicServer) -> None:
    api.enqueue(text_reply("thought about it"))
    result = _run(["-p", "think", "--effort", "max", "--model", "claude-opus-5-5"], tmp_path,
                  {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": api.base_url})
    assert result.returncode == 0, result.stderr
    body = api.requests[0].body
    assert body["thinking"] == {"type": "adaptive"} and body["output_config"] == {"effort": "max"}


def test_an_agent_definitions_effort_reaches_the_request(tmp_path: Path, api: FakeAnthropicServer) -> None:
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "thinker.md").write_text("---\nname: thinker\ndescription: d\neffort: low\n"
                                       "model: claude-sonnet-4-6\n---\nThink.\n")
    api.enqueue(text_reply("ok"))
    result = _run(["-p", "think", "--agent", "thinker", "--trust"], tmp_path,
                  {"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": api.base_url})
    assert result.returncode == 0, result.stderr
    thinking = api.requests[0].body["thinking"]
    assert thinking["type"] == "enabled" and thinking["budget_tokens"] == 4_000
