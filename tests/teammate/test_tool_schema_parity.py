"""Swarm's tool input schemas against Claude Code's, for every tool both have.

A real Claude is trained on Claude Code's tools, so a name, type, enum or
required field that differs is a call the model gets wrong. The reference is
``tests/fixtures/claude_code_tool_schemas-<version>.json``, recorded from the
``sdk-tools.d.ts`` in Claude Code's npm package by
``scripts/record_claude_code_schemas.py``. Differences that are deliberate are
listed in ``DELIBERATE`` with the reason; any other difference fails, and so
does a listed one that is gone (the list stays true).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from swarm.agent.tool_api.base import Tool
from swarm.agent.tools import core_tools
from swarm.agent.tools.agent_tool import AgentTool, TaskStop
from swarm.agent.tools.tasks import TaskCreate, TaskGet, TaskList, TaskUpdate
from swarm.teammate.plan_tool import ExitPlanMode

CLAUDE_CODE_VERSION = "2.1.332"
FIXTURE = Path(__file__).parent.parent / "fixtures" / f"claude_code_tool_schemas-{CLAUDE_CODE_VERSION}.json"

Difference = tuple[str, str, str]
"""(tool, property, kind): kind is missing, extra, type, enum or required."""

DELIBERATE: dict[Difference, str] = {
    ("Agent", "cwd", "extra"): "swarm lets a teammate or subagent start in another directory",
    ("Agent", "plan_mode_required", "extra"): "swarm teammates can be made to get a plan approved first",
    ("Agent", "runtime", "extra"): "swarm can run a teammate as a Claude Code CLI session",
    ("Agent", "host", "extra"): "swarm can place a teammate on another machine (`swarm host serve`)",
    ("Agent", "labels", "extra"): "swarm can place a teammate on any host with these labels",
    ("Agent", "model", "enum"): "swarm also offers 'inherit' (the parent's model), and accepts a full model id",
    ("Agent", "mode", "enum"): "swarm's permission modes are checked when the teammate starts, not in the schema",
    ("Agent", "isolation", "enum"): "swarm has no remote agents",
    ("Read", "allow_large", "missing"): "swarm refuses a read over its token limit with an error pointing at "
                                        "offset/limit; there is no switch to take the whole file",
    ("ExitPlanMode", "plan", "extra"): "a swarm teammate cannot write a plan file in plan mode; it may pass the "
                                       "plan here (optional: without it the plan is its message's text)",
    ("ExitPlanMode", "allowedPrompts", "missing"): "deprecated and unused in Claude Code; ignored like any stray field",
}

_JSON_TYPES = {"integer": "number"}
"""Claude Code's TypeScript has only ``number``; swarm's ``integer`` is a number."""


def _swarm_tools() -> list[Tool[Any]]:
    return [*core_tools(), AgentTool(), TaskStop(), TaskCreate(), TaskGet(), TaskList(), TaskUpdate(),
            ExitPlanMode(gate=None)]  # type: ignore[arg-type]  # the schema does not need the gate


def _flat(prop: dict[str, Any]) -> dict[str, Any]:
    """A property's one non-null variant (``X | None`` is shown as ``anyOf``)."""
    variants = [v for v in prop.get("anyOf", [prop]) if v.get("type") != "null"]
    return variants[0] if len(variants) == 1 else {"type": sorted(str(v.get("type")) for v in variants)}


def _type(prop: dict[str, Any]) -> str:
    flat = _flat(prop)
    kind = flat.get("type") or ("string" if "enum" in flat else "?")
    return _JSON_TYPES.get(kind, kind) if isinstance(kind, str) else "|".join(kind)


def differences(tool: str, ours: dict[str, Any], theirs: dict[str, Any]) -> set[Difference]:
    """How swarm's JSON schema for ``tool`` differs from Claude Code's recorded one."""
    found: set[Difference] = set()
    our_props: dict[str, Any] = ours.get("properties", {})
    their_props: dict[str, Any] = theirs["properties"]
    for name in their_props.keys() - our_props.keys():
        found.add((tool, name, "missing"))
    for name in our_props.keys() - their_props.keys():
        found.add((tool, name, "extra"))
    for name in our_props.keys() & their_props.keys():
        if _type(our_props[name]) != their_props[name]["type"]:
            found.add((tool, name, "type"))
        if sorted(_flat(our_props[name]).get("enum", [])) != sorted(their_props[name].get("enum", [])):
            found.add((tool, name, "enum"))
    for name in set(ours.get("required", [])) ^ set(theirs["required"]):
        found.add((tool, name, "required"))
    return found


def test_fixture_records_the_version_and_the_tools() -> None:
    recorded = json.loads(FIXTURE.read_text())
    assert recorded["claude_code_version"] == CLAUDE_CODE_VERSION
    assert recorded["tools"]["Grep"]["properties"]["output_mode"]["enum"] == ["content", "files_with_matches", "count"]
    assert recorded["tools"]["ExitPlanMode"]["required"] == []


def test_every_shared_tool_matches_claude_code_but_for_the_listed_differences() -> None:
    recorded = json.loads(FIXTURE.read_text())["tools"]
    tools = {tool.name: tool for tool in _swarm_tools()}
    assert set(recorded) <= set(tools), "a recorded tool swarm does not build here"
    found = set()
    for name, theirs in recorded.items():
        found |= differences(name, tools[name].spec().input_schema, theirs)
    listed = set(DELIBERATE)
    assert sorted(found - listed) == [], f"{sorted(found - listed)}: differences from Claude Code not listed as deliberate"
    assert sorted(listed - found) == [], f"{sorted(listed - found)}: listed differences that are gone: drop them from DELIBERATE"
