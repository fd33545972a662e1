"""The Agent tool's inputs over the real SDK: ``subagent_type: "fork"``, ``model``, ``effort``, ``run_in_background``.

The parent and its children talk to the fake Messages API on loopback (see
``tests/agent/subagent_helpers.py``); each test reads what the child's
requests carried, or what came back to the parent.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from swarm.agent.definitions import load_agents
from swarm.agent.subagents import FORK_TAG
from swarm.agent.agent_listing import agent_types
from swarm.agent.tools.agent_tool import AgentTool
from swarm.models.aliases import expand_alias
from swarm.models.catalog import ALIASES
from tests.agent.subagent_helpers import PARENT, last_results, run_main
from tests.fakes import FakeAnthropicServer, text_reply, tool_use_reply
from tests.fakes.anthropic_server import unmarked


def test_subagent_type_fork_forks_the_parent(api: FakeAnthropicServer, tmp_path: Path) -> None:
    api.enqueue(tool_use_reply("Agent", {"description": "part", "prompt": "DO THE PART", "subagent_type": "fork"},
                               tool_id="toolu_f"), text_reply("part done"), text_reply("ok"))
    run_main(api, tmp_path)
    parent, fork, _ = (replace(r, body=unmarked(r.body)) for r in api.requests)
    assert fork.body["system"] == parent.body["system"] and fork.body["tools"] == parent.body["tools"]
    assert fork.body["messages"][:-2] == parent.body["messages"]
    assert fork.body["messages"][-1]["content"][-1]["text"].startswith(f"<{FORK_TAG}>")


def test_subagent_type_fork_with_forks_off_is_an_error_saying_so(api: FakeAnthropicServer, tmp_path: Path) -> None:
    api.enqueue(tool_use_reply("Agent", {"description": "part", "prompt": "x", "subagent_type": "fork"}),
                text_reply("ok"))
    run_main(api, tmp_path, SWARM_FORK_SUBAGENT="0")
    [error] = last_results(api.requests[1])
    assert error["is_error"] and "SWARM_FORK_SUBAGENT" in error["content"]


def test_the_schema_offers_the_model_aliases_and_the_efforts() -> None:
    props = AgentTool().spec().input_schema["properties"]
    assert props["model"]["enum"] == [*ALIASES, "inherit"]
    assert "fable" in props["model"]["enum"]
    assert props["effort"]["enum"] == ["low", "medium", "high", "xhigh", "max"]
    assert props["run_in_background"]["type"] == "boolean" and "default" not in props["run_in_background"]


def test_a_model_alias_picks_the_childs_model(api: FakeAnthropicServer, tmp_path: Path) -> None:
    api.enqueue(tool_use_reply("Agent", {"description": "x", "prompt": "y", "subagent_type": "general-purpose",
                                         "model": "fable"}), text_reply("done"), text_reply("ok"))
    run_main(api, tmp_path)
    assert api.requests[1].body["model"] == expand_alias("fable", {})


def test_effort_reaches_the_childs_requests(api: FakeAnthropicServer, tmp_path: Path) -> None:
    agents = json.dumps({"thinker": {"description": "d", "prompt": "Think.", "model": "claude-opus-5-5",
                                     "effort": "low"}})
    api.enqueue(tool_use_reply("Agent", {"description": "x", "prompt": "y", "subagent_type": "thinker",
                                         "effort": "xhigh"}), text_reply("done"), text_reply("ok"))
    run_main(api, tmp_path, agents_json=agents)
    assert api.requests[1].body["output_config"]["effort"] == "xhigh"


def test_a_named_agent_runs_in_the_background_unless_asked_not_to(api: FakeAnthropicServer, tmp_path: Path) -> None:
    api.enqueue(tool_use_reply("Agent", {"description": "bg", "prompt": "NAMED JOB", "name": "helper",
                                         "subagent_type": "general-purpose"}),
                text_reply("waiting"), text_reply("heard back"), when=PARENT)
    api.enqueue(text_reply("named done"), when="NAMED JOB")
    run_main(api, tmp_path)
    parents = [r for r in api.requests if PARENT in json.dumps(r.body)]
    assert "Async agent launched" in last_results(parents[1])[0]["content"]


def test_a_named_agent_with_run_in_background_false_answers_in_the_call(api: FakeAnthropicServer,
                                                                      tmp_path: Path) -> None:
    api.enqueue(tool_use_reply("Agent", {"description": "fg", "prompt": "NAMED JOB", "name": "helper",
                                         "subagent_type": "general-purpose", "run_in_background": False}),
                text_reply("named done"), text_reply("ok"))
    run_main(api, tmp_path)
    [answer] = last_results(api.requests[2])
    assert "named done" in answer["content"] and "Async" not in answer["content"]


def test_a_definitions_long_description_is_listed_whole(tmp_path: Path) -> None:
    tail = "Use proactively after every change to the parser."
    long = "Reviews code for correctness, naming, and tests; " * 5 + tail
    catalog = load_agents(tmp_path, env={}, cli_json=json.dumps({"reviewer": {"description": long, "prompt": "R."}}))
    assert tail in agent_types(catalog)


def test_the_description_says_when_and_how_to_delegate() -> None:
    text = AgentTool.description
    for words in ("fork", "self-contained", "in parallel", "do not poll", "Do not delegate"):
        assert words in text
