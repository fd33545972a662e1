"""The tool pool of a child agent: each gate, the definition's lists, and how they combine."""

from __future__ import annotations

from typing import Any

import pytest

from swarm.agent.toolpool import (
    ALL_AGENTS_DISALLOWED,
    BACKGROUND_ALLOWED,
    CUSTOM_AGENTS_DISALLOWED,
    ToolPool,
    tool_pool,
)

PARENT = ("Read", "Write", "Edit", "Bash", "Glob", "Grep", "SendMessage", "Agent", "TaskOutput", "TaskStop",
          "ExitPlanMode", "AskUserQuestion", "TaskCreate", "Skill", "WebFetch", "mcp__db__query")
SUBAGENT_DEFAULT = ("Read", "Write", "Edit", "Bash", "Glob", "Grep", "SendMessage", "TaskCreate", "Skill",
                    "WebFetch", "mcp__db__query")
BACKGROUND_DEFAULT = ("Read", "Write", "Edit", "Bash", "Glob", "Grep", "SendMessage", "TaskCreate", "Skill",
                      "mcp__db__query")
SYNC_BUILTIN: dict[str, Any] = {"tools": None, "builtin": True, "background": False}

CASES: list[tuple[str, dict[str, Any], tuple[str, ...], frozenset[str] | None]] = [
    # gate 1: no subagent gets the main agent's session tools, Agent included
    ("gate1-builtin", {}, SUBAGENT_DEFAULT, None),
    # gate 2: a custom definition loses the custom list (today the same as gate 1's)
    ("gate2-custom", {"builtin": False}, SUBAGENT_DEFAULT, None),
    # gate 3: a background agent keeps only the allowlist (MCP tools pass)
    ("gate3-background", {"background": True}, BACKGROUND_DEFAULT, None),
    ("gate3-background-custom", {"background": True, "builtin": False}, BACKGROUND_DEFAULT, None),
    # the definition's tools: wildcard, intersection in the parent's order, specifiers, unknown names
    ("wildcard", {"tools": ["*"]}, SUBAGENT_DEFAULT, None),
    ("wildcard-spaced", {"tools": [" * "]}, SUBAGENT_DEFAULT, None),
    ("listed", {"tools": ["Grep", "Read", "Bash(git *)"]}, ("Read", "Bash", "Grep"), None),
    ("unknown-names-ignored", {"tools": ["Read", "WebSearch", "NotebookEdit"]}, ("Read",), None),
    ("bad-syntax-ignored", {"tools": ["Read", "Bash(", "", "9lives"]}, ("Read",), None),
    ("wildcard-only-alone", {"tools": ["*", "Read"]}, ("Read",), None),
    ("empty-list", {"tools": []}, (), None),
    ("mcp-listed", {"tools": ["mcp__db__query"]}, ("mcp__db__query",), None),
    ("mcp-not-listed", {"tools": ["Read"]}, ("Read",), None),
    # disallowed: subtracted by tool name, a specifier removes the whole tool
    ("disallowed", {"disallowed": ["Write", "Edit"]},
     ("Read", "Bash", "Glob", "Grep", "SendMessage", "TaskCreate", "Skill", "WebFetch", "mcp__db__query"), None),
    ("disallowed-specifier", {"tools": ["Read", "Bash"], "disallowed": ["Bash(rm *)"]}, ("Read",), None),
    ("disallowed-unknown", {"tools": ["Read"], "disallowed": ["Nope", "Read("]}, ("Read",), None),
    ("disallowed-beats-tools", {"tools": ["Read", "Grep"], "disallowed": ["Grep"]}, ("Read",), None),
    # the gates come first: a definition cannot ask its way past them
    ("gate1-beats-tools", {"tools": ["TaskOutput", "AskUserQuestion", "Read"]}, ("Read",), None),
    ("gate3-beats-tools", {"tools": ["Read", "WebFetch"], "background": True}, ("Read",), None),
    # Agent(types): which types it may spawn; Agent itself stays out of a subagent's pool
    ("agent-types", {"tools": ["Read", "Agent(Explore, Plan)"]}, ("Read",), frozenset({"Explore", "Plan"})),
    ("agent-types-two-entries", {"tools": ["Agent(Explore)", "Agent(Plan)", "Read"]},
     ("Read",), frozenset({"Explore", "Plan"})),
    ("agent-plain", {"tools": ["Agent", "Read"]}, ("Read",), None),
    ("agent-types-wildcard", {"tools": ["*"]}, SUBAGENT_DEFAULT, None),
    # the main thread skips the gates; only the definition's lists apply
    ("main-thread-all", {"main_thread": True}, PARENT, None),
    ("main-thread-agent-types", {"main_thread": True, "tools": ["Read", "Agent(Explore, Plan)"]},
     ("Read", "Agent"), frozenset({"Explore", "Plan"})),
    ("main-thread-background-custom", {"main_thread": True, "builtin": False, "background": True,
                                       "tools": ["Read", "TaskStop"], "disallowed": ["Read"]}, ("TaskStop",), None),
    # plan mode keeps its only exit, also in the background
    ("plan-mode", {"permission_mode": "plan", "tools": ["Read", "ExitPlanMode"]}, ("Read", "ExitPlanMode"), None),
    ("plan-mode-background", {"permission_mode": "plan", "background": True},
     ("Read", "Write", "Edit", "Bash", "Glob", "Grep", "SendMessage", "ExitPlanMode", "TaskCreate", "Skill",
      "mcp__db__query"), None),
    ("other-mode-no-exit", {"permission_mode": "acceptEdits", "tools": ["Read", "ExitPlanMode"]}, ("Read",), None),
    # a fork child: the parent's list byte for byte, whatever else is asked
    ("fork", {"fork_child": True}, PARENT, None),
    ("fork-ignores-the-rest", {"fork_child": True, "builtin": False, "background": True, "tools": ["Read"],
                               "disallowed": ["Bash"], "permission_mode": "plan"}, PARENT, None),
]


@pytest.mark.parametrize(("overrides", "names", "spawnable"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_tool_pool(overrides: dict[str, Any], names: tuple[str, ...], spawnable: frozenset[str] | None) -> None:
    assert tool_pool(PARENT, **{**SYNC_BUILTIN, **overrides}) == ToolPool(names=names, spawnable=spawnable)


def test_the_lists_are_claude_codes() -> None:
    """What the gates hold, checked once against the seeds (a change here is a deliberate decision)."""
    assert ALL_AGENTS_DISALLOWED == {"TaskOutput", "TaskStop", "ExitPlanMode", "EnterPlanMode", "AskUserQuestion",
                                     "Agent"}
    assert CUSTOM_AGENTS_DISALLOWED >= ALL_AGENTS_DISALLOWED
    assert BACKGROUND_ALLOWED == {"Read", "Write", "Edit", "Bash", "Glob", "Grep", "Skill", "TaskCreate", "TaskGet",
                                  "TaskList", "TaskUpdate", "SendMessage"}
