"""make_provider: which provider a model name, playbook and environment give."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarm.errors import UsageError
from swarm.models.anthropic_provider import DEFAULT_MODEL, AnthropicProvider
from swarm.models.base import ModelRequest
from swarm.models.factory import make_provider
from swarm.models.messages import Message
from swarm.models.scripted import ScriptedProvider

KEY = {"ANTHROPIC_API_KEY": "sk-test"}


@pytest.fixture
def playbook(tmp_path: Path) -> Path:
    path = tmp_path / "play.toml"
    path.write_text('[[rules]]\nmatch = "hi"\ntext = "hello {agent_name}"\n', encoding="utf-8")
    return path


def answer(provider: object, text: str) -> str:
    assert isinstance(provider, ScriptedProvider)
    return provider.complete(ModelRequest(messages=[Message.user_text(text)])).message().text()


def test_scripted_by_name_even_with_a_key() -> None:
    provider = make_provider("scripted", playbook=None, env=KEY)
    assert isinstance(provider, ScriptedProvider)
    assert answer(provider, "hi") == 'Received: "hi"'


def test_scripted_with_path_in_the_name(playbook: Path) -> None:
    provider = make_provider(f"scripted:{playbook}", playbook=None, env=KEY, variables={"agent_name": "ann"})
    assert answer(provider, "hi") == "hello ann"


def test_a_playbook_means_scripted_whatever_the_model(playbook: Path) -> None:
    provider = make_provider("claude-opus-4-6", playbook=playbook, env=KEY, variables={"agent_name": "bo"})
    assert answer(provider, "hi") == "hello bo"


def test_api_key_gives_anthropic_with_model_precedence() -> None:
    env = {**KEY, "ANTHROPIC_MODEL": "claude-from-env"}
    explicit = make_provider("claude-explicit", playbook=None, env=env)
    assert isinstance(explicit, AnthropicProvider) and explicit.model == "claude-explicit"
    assert make_provider(None, playbook=None, env=env).model == "claude-from-env"
    assert make_provider(None, playbook=None, env=KEY).model == DEFAULT_MODEL


def test_no_key_and_no_model_asked_falls_back_to_offline_scripted() -> None:
    assert isinstance(make_provider(None, playbook=None, env={"ANTHROPIC_API_KEY": ""}), ScriptedProvider)
    with pytest.raises(UsageError, match="no credentials"):  # a model named: never the echo model
        make_provider("claude-x", playbook=None, env={"ANTHROPIC_API_KEY": ""})


def test_two_different_playbooks_are_a_usage_error(playbook: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="two playbooks"):
        make_provider(f"scripted:{tmp_path / 'other.toml'}", playbook=playbook, env={})
    same = make_provider(f"scripted:{playbook}", playbook=playbook, env={}, variables={"agent_name": "c"})
    assert answer(same, "hi") == "hello c"


def test_scripted_colon_without_path_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="needs a playbook path"):
        make_provider("scripted:", playbook=None, env={})
