"""A main agent with subagents over the real SDK and the fake Messages API, for the subagent tests."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from swarm.agent.definitions import load_agents
from swarm.agent.headless import MainOptions, run_headless
from swarm.agent.limits import Limits
from swarm.agent.loop import AgentRun
from swarm.models.anthropic_provider import AnthropicProvider
from swarm.models.retry_policy import RetryPolicy
from tests.fakes import FakeAnthropicServer

PARENT = "Launch a subagent"
"""Text only requests that offer the Agent tool carry (its description): routes replies when agents overlap."""


def api_env(api: FakeAnthropicServer, **extra: str) -> dict[str, str]:
    return {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": api.base_url,
            "CLAUDE_CONFIG_DIR": os.environ["CLAUDE_CONFIG_DIR"], **extra}


def provider_for(env: dict[str, str], model: str) -> AnthropicProvider:
    return AnthropicProvider(model=model, env=env, retry=RetryPolicy(max_retries=0), timeout=10)


def run_main(api: FakeAnthropicServer, cwd: Path, prompt: str = "work", *, agents_json: str | None = None,
             agent: str | None = None, cancel: threading.Event | None = None, **env_extra: str) -> AgentRun:
    """``swarm run -p`` in ``cwd`` as the definition ``agent`` (if given), model ``claude-parent``."""
    env = api_env(api, **env_extra)
    parent = provider_for(env, "claude-parent")
    catalog = load_agents(cwd, env=env, cli_json=agents_json)
    main = MainOptions(catalog=catalog, env=env, make_provider=lambda model: provider_for(env, model),
                     agents_dir=cwd / "agents", definition=catalog.get(agent) if agent else None)
    try:
        return run_headless(prompt, parent, cwd=cwd, limits=Limits(max_turns=10), cancel=cancel,
                            transcript=cwd / "main.jsonl", main=main)
    finally:
        parent.close()


def tool_names(request: Any) -> list[str]:
    return [t["name"] for t in request.body["tools"]]


def last_results(request: Any) -> list[dict[str, Any]]:
    """The tool results in a request's last message."""
    return [b for b in request.body["messages"][-1]["content"] if b.get("type") == "tool_result"]


def with_text(api: FakeAnthropicServer, text: str) -> list[Any]:
    """The requests whose body contains ``text``."""
    return [r for r in api.requests if text in json.dumps(r.body)]


def without_text(api: FakeAnthropicServer, text: str) -> list[Any]:
    return [r for r in api.requests if text not in json.dumps(r.body)]
