"""Credentials: an API key, a bearer token, Bedrock and Vertex, and never the echo model when a real one was asked."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from swarm.errors import UsageError
from swarm.models.anthropic_provider import AnthropicProvider
from swarm.models.base import ModelRequest
from swarm.models.credentials import find_credentials
from swarm.models.factory import choose_model, make_provider
from swarm.models.messages import Message
from swarm.models.scripted import ScriptedProvider
from tests.fakes import FakeAnthropicServer
from tests.fakes.anthropic_server import text_reply
from tests.forked import run_swarm

HI = ModelRequest(messages=[Message.user_text("hi")], max_tokens=16)


def test_a_bearer_token_alone_reaches_the_api_as_authorization(anthropic_server: FakeAnthropicServer) -> None:
    anthropic_server.enqueue(text_reply("hello"))
    env = {"ANTHROPIC_AUTH_TOKEN": "tok-123", "ANTHROPIC_BASE_URL": anthropic_server.base_url}
    provider = make_provider(None, playbook=None, env=env)
    assert isinstance(provider, AnthropicProvider)
    with provider:
        assert provider.complete(HI).message().text() == "hello"
    headers = anthropic_server.requests[0].headers
    assert headers["authorization"] == "Bearer tok-123" and "x-api-key" not in headers
    assert choose_model(None, playbook=None, env=env).why == "ANTHROPIC_AUTH_TOKEN is set"


def test_a_key_and_a_token_send_the_key_as_the_sdk_does(anthropic_server: FakeAnthropicServer) -> None:
    anthropic_server.enqueue(text_reply("hello"))
    env = {"ANTHROPIC_API_KEY": "k-1", "ANTHROPIC_AUTH_TOKEN": "tok", "ANTHROPIC_BASE_URL": anthropic_server.base_url}
    with AnthropicProvider(env=env) as provider:
        provider.complete(HI)
    assert anthropic_server.requests[0].headers["authorization"] == "Bearer k-1"


@pytest.mark.parametrize(("switch", "extra"), [("CLAUDE_CODE_USE_BEDROCK", "bedrock"),
                                                ("CLAUDE_CODE_USE_VERTEX", "vertex")])
def test_a_cloud_without_its_sdk_extra_is_one_line_not_the_echo_model(switch: str, extra: str) -> None:
    env = {switch: "1", "AWS_REGION": "us-east-1", "CLOUD_ML_REGION": "us-east5",
           "ANTHROPIC_VERTEX_PROJECT_ID": "p"}
    with pytest.raises(UsageError) as caught:
        make_provider(None, playbook=None, env=env)
    message = str(caught.value)
    assert "\n" not in message and f"pip install 'anthropic[{extra}]'" in message and switch in message
    with pytest.raises(UsageError, match=extra):
        choose_model(None, playbook=None, env=env)


def test_bedrock_wins_over_a_key_as_claude_code_does() -> None:
    found = find_credentials({"CLAUDE_CODE_USE_BEDROCK": "true", "ANTHROPIC_API_KEY": "k"})
    assert found is not None and found.kind == "bedrock"
    assert find_credentials({"CLAUDE_CODE_USE_BEDROCK": "0", "ANTHROPIC_API_KEY": " "}) is None


@pytest.mark.parametrize(("model", "env", "said"), [
    ("claude-opus-4-6", {}, "'claude-opus-4-6'"),
    (None, {"ANTHROPIC_MODEL": "claude-opus-4-6"}, "ANTHROPIC_MODEL"),
])
def test_a_real_model_asked_for_without_credentials_is_an_error(model: str | None, env: dict[str, str],
                                                                 said: str) -> None:
    with pytest.raises(UsageError) as caught:
        make_provider(model, playbook=None, env=env)
    message = str(caught.value)
    assert said in message and "ANTHROPIC_API_KEY" in message and "ANTHROPIC_AUTH_TOKEN" in message
    assert "scripted" in message  # the way to run offline on purpose


def test_nothing_asked_and_no_credentials_stays_the_offline_default() -> None:
    assert isinstance(make_provider(None, playbook=None, env={}), ScriptedProvider)
    assert choose_model(None, playbook=None, env={}).scripted


def _swarm_run(args: list[str], cwd: Path, extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_CODE_USE_"))}
    return run_swarm(["run", *args], cwd=cwd, env={**env, **extra}, timeout=60)


def test_swarm_run_with_a_model_and_no_key_says_what_to_set(tmp_path: Path) -> None:
    done = _swarm_run(["-p", "hi", "--model", "opus"], tmp_path, {})
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("swarm: error:") and "ANTHROPIC_API_KEY" in lines[0]


def test_swarm_run_on_bedrock_without_boto3_says_so(tmp_path: Path) -> None:
    done = _swarm_run(["-p", "hi"], tmp_path, {"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "us-east-1"})
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "anthropic[bedrock]" in lines[0]


def test_swarm_run_with_a_bearer_token_runs_claude(tmp_path: Path, anthropic_server: FakeAnthropicServer) -> None:
    anthropic_server.enqueue(text_reply("from claude"))
    done = _swarm_run(["-p", "hi"], tmp_path, {"ANTHROPIC_AUTH_TOKEN": "tok",
                                                "ANTHROPIC_BASE_URL": anthropic_server.base_url})
    assert done.returncode == 0, done.stderr
    assert done.stdout == "from claude\n"
    assert anthropic_server.requests[0].headers["authorization"] == "Bearer tok"
