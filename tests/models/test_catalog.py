"""The model table (``swarm.models.catalog``): one place for what each model is, and names checked before a start."""

from __future__ import annotations

from typing import get_args

import pytest
from anthropic.types import ModelParam

from swarm.agent.compaction import CompactionPolicy
from swarm.errors import UsageError
from swarm.models.aliases import agent_model, expand_alias
from swarm.models.anthropic_provider import DEFAULT_MODEL, AnthropicProvider
from swarm.models.base import ModelRequest
from swarm.models.catalog import ALIASES, MODELS, check_name, model_info


def test_every_alias_names_a_listed_model_the_sdk_knows() -> None:
    known = {name for arg in get_args(ModelParam) for name in get_args(arg)}
    assert set(ALIASES) == {"haiku", "sonnet", "opus", "fable"}
    assert all(ALIASES[a] in MODELS and ALIASES[a] in known for a in ALIASES)


def test_the_default_model_is_the_sonnet_alias() -> None:
    assert DEFAULT_MODEL == expand_alias("sonnet", {}) == ALIASES["sonnet"]


@pytest.mark.parametrize(("model", "window", "output"), [
    ("claude-sonnet-5-5", 1_000_000, 128_000), ("claude-haiku-4-5-20251001", 200_000, 64_000),
    ("claude-sonnet-4-6[1m]", 1_000_000, 64_000), ("claude-next-9", 200_000, 32_000)])
def test_windows_and_output_limits_are_each_models_own(model: str, window: int, output: int) -> None:
    info = model_info(model)
    assert (info.context_window, info.max_output) == (window, output)
    assert CompactionPolicy().threshold(model) == window - 13_000


@pytest.mark.parametrize("name", ["opsu", "gpt-4", "sonet 5"])
def test_an_unknown_model_name_is_one_line_before_anything_starts(name: str) -> None:
    with pytest.raises(UsageError, match=f"unknown model {name!r}: use an alias"):
        check_name(name)
    with pytest.raises(UsageError):
        agent_model(env={}, asked=name, definition_model=None, parent_model=None, subagent=False)


@pytest.mark.parametrize("name", ["fable", "Opus", "inherit", "claude-opus-5-5", "claude-x[1m]", "scripted:p.toml"])
def test_aliases_ids_and_the_offline_model_are_accepted(name: str) -> None:
    check_name(name)  # raises UsageError for a name that is not a model (the test above)
    resolved = agent_model(env={}, asked=name, definition_model=None, parent_model="claude-parent-1")
    assert resolved == ("claude-parent-1" if name == "inherit" else expand_alias(name, {}))


def test_an_output_cap_from_the_environment_lowers_max_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[int] = []
    provider = AnthropicProvider(env={"ANTHROPIC_API_KEY": "k", "CLAUDE_CODE_MAX_OUTPUT_TOKENS": "4000"})
    monkeypatch.setattr(provider, "_call_with_retries", lambda params, stop: sent.append(params["max_tokens"]) or _raise())
    with pytest.raises(RuntimeError):
        provider.complete(ModelRequest(messages=[], max_tokens=128_000))
    assert sent == [4000]
    with pytest.raises(UsageError, match="SWARM_MAX_OUTPUT_TOKENS='lots' is not a positive number"):
        AnthropicProvider(env={"ANTHROPIC_API_KEY": "k", "SWARM_MAX_OUTPUT_TOKENS": "lots"})


def _raise() -> None:
    raise RuntimeError("stop here: only the request's max_tokens is looked at")
