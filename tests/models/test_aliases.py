"""Model aliases and the subagent model chain: tables of environment, tool, definition and parent model."""

from __future__ import annotations

from typing import get_args

import pytest
from anthropic.types import ModelParam

from swarm.models.aliases import (
    ALIASES,
    DEFAULT_IDS,
    agent_model,
    expand_alias,
    is_scripted,
)

HAIKU, SONNET, OPUS = DEFAULT_IDS["haiku"], DEFAULT_IDS["sonnet"], DEFAULT_IDS["opus"]
PARENT = "claude-parent-1"

EXPAND: list[tuple[str, str, dict[str, str], str]] = [
    ("haiku", "haiku", {}, HAIKU),
    ("sonnet", "sonnet", {}, SONNET),
    ("opus", "opus", {}, OPUS),
    ("case-and-space", " Opus ", {}, OPUS),
    ("model-id-unchanged", "claude-sonnet-4-5-20250929", {}, "claude-sonnet-4-5-20250929"),
    ("other-name-unchanged", "gpt-whatever", {"SWARM_MODEL_SONNET": "x"}, "gpt-whatever"),
    ("swarm-override", "sonnet", {"SWARM_MODEL_SONNET": "my-sonnet"}, "my-sonnet"),
    ("claude-code-override", "haiku", {"ANTHROPIC_DEFAULT_HAIKU_MODEL": "cc-haiku"}, "cc-haiku"),
    ("swarm-beats-claude-code", "opus", {"SWARM_MODEL_OPUS": "s-opus", "ANTHROPIC_DEFAULT_OPUS_MODEL": "cc-opus"},
     "s-opus"),
    ("blank-override-ignored", "opus", {"SWARM_MODEL_OPUS": "  ", "ANTHROPIC_DEFAULT_OPUS_MODEL": "cc-opus"},
     "cc-opus"),
    ("override-stripped", "haiku", {"SWARM_MODEL_HAIKU": " h-1 \n"}, "h-1"),
    ("other-alias-override-unused", "haiku", {"SWARM_MODEL_SONNET": "my-sonnet"}, HAIKU),
]


@pytest.mark.parametrize(("model", "env", "expected"), [c[1:] for c in EXPAND], ids=[c[0] for c in EXPAND])
def test_expand_alias(model: str, env: dict[str, str], expected: str) -> None:
    assert expand_alias(model, env) == expected


SUB = "SWARM_SUBAGENT_MODEL"
CC_SUB = "CLAUDE_CODE_SUBAGENT_MODEL"
# (id, env, tool model, definition model, parent model, expected)
RESOLVE: list[tuple[str, dict[str, str], str | None, str | None, str, str]] = [
    ("nothing-set-inherits", {}, None, None, PARENT, PARENT),
    ("definition", {}, None, "haiku", PARENT, HAIKU),
    ("tool-beats-definition", {}, "opus", "haiku", PARENT, OPUS),
    ("env-beats-tool", {SUB: "sonnet"}, "opus", "haiku", PARENT, SONNET),
    ("claude-code-env", {CC_SUB: "claude-x"}, "opus", None, PARENT, "claude-x"),
    ("swarm-env-beats-claude-code-env", {SUB: "claude-s", CC_SUB: "claude-c"}, None, None, PARENT, "claude-s"),
    ("blank-env-unset", {SUB: " ", CC_SUB: ""}, None, "opus", PARENT, OPUS),
    ("blank-tool-unset", {}, "", "opus", PARENT, OPUS),
    ("definition-inherit", {}, None, "inherit", PARENT, PARENT),
    ("tool-inherit-beats-definition", {}, "inherit", "haiku", PARENT, PARENT),
    ("env-inherit-beats-tool", {SUB: "INHERIT"}, "opus", "haiku", PARENT, PARENT),
    ("parent-alias-expanded", {}, None, None, "sonnet", SONNET),
    ("alias-override-applies", {"SWARM_MODEL_HAIKU": "fast-1"}, "haiku", None, PARENT, "fast-1"),
    ("model-id-kept", {}, "claude-opus-4-5", None, PARENT, "claude-opus-4-5"),
    # an offline parent keeps its children offline
    ("scripted-parent", {SUB: "opus"}, "haiku", "sonnet", "scripted", "scripted"),
    ("scripted-playbook-parent", {}, "haiku", None, "scripted:/tmp/play.toml", "scripted:/tmp/play.toml"),
    ("scripted-like-name-is-not-scripted", {}, "haiku", None, "scriptedx", HAIKU),
]


@pytest.mark.parametrize(("env", "tool_model", "definition_model", "parent_model", "expected"),
                         [c[1:] for c in RESOLVE], ids=[c[0] for c in RESOLVE])
def test_agent_model_for_a_subagent(env: dict[str, str], tool_model: str | None, definition_model: str | None,
                       parent_model: str, expected: str) -> None:
    assert agent_model(env=env, asked=tool_model, definition_model=definition_model,
                         parent_model=parent_model) == expected


@pytest.mark.parametrize(("model", "expected"), [
    ("scripted", True), ("scripted:play.toml", True), ("scripted-2", False), ("claude-haiku-5-5", False),
])
def test_is_scripted(model: str, expected: bool) -> None:
    assert is_scripted(model) is expected


def test_default_ids_are_models_the_installed_sdk_knows() -> None:
    known = {name for arg in get_args(ModelParam) for name in get_args(arg)}
    assert set(DEFAULT_IDS) == set(ALIASES)
    for alias, model in DEFAULT_IDS.items():
        assert model in known and alias in model
