"""Which tools a subagent gets: three gates, then its definition's own lists.

One pure function, ``tool_pool``, after Claude Code's ``filterToolsForAgent``
and ``resolveAgentTools``. The parent's tool names go through, in order:

1. ``ALL_AGENTS_DISALLOWED`` — no subagent gets these (they drive the main
   agent's session: background task control, plan mode, asking the user,
   and ``Agent`` itself against recursive spawning);
2. ``CUSTOM_AGENTS_DISALLOWED`` — further ones for definitions that are not
   built in (user, project, command line);
3. ``BACKGROUND_ALLOWED`` — a background agent has no one to answer an
   interactive tool, so it keeps only these;
4. the definition's ``tools`` (absent or ``["*"]`` = everything left),
   intersected, then its ``disallowedTools`` subtracted.

Exceptions, as in Claude Code:

- a **fork child** gets the parent's list unchanged — byte-identical tools
  keep the prompt cache — ``Agent`` included; the Agent tool refuses a
  second fork when it is called;
- the **main thread** (``swarm run --agent NAME``, a teammate started from
  a definition) skips the gates and applies only step 4, so ``Agent`` stays;
- **MCP tools** (``mcp__…``) pass the gates (their server decides), not step 4
  (where ``mcp__server`` and ``mcp__server__*`` name every tool of a server);
- **ExitPlanMode** passes the gates for an agent in ``plan`` mode: it is
  that agent's only way out.

Entries in ``tools`` and ``disallowed`` are permission-rule syntax
(``Bash(git *)``): the tool name is what counts for the pool, the
specifier is for the permission rules — so, as in Claude Code,
``disallowed: ["Bash(rm *)"]`` removes Bash altogether. Only ``["*"]``
alone is the wildcard. ``Agent(Explore, Plan)`` in
``tools`` also limits which agent types the agent may spawn
(``ToolPool.spawnable``; ``spawnable_types`` for a main thread, which is the
only kind that keeps ``Agent``). Names the parent does not offer, and entries
that are not valid rule syntax, are ignored: a definition written for
Claude Code's larger tool set still loads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from swarm.agent.permissions.rules import Rule, covers_server
from swarm.errors import UsageError

AGENT_TOOL = "Agent"
EXIT_PLAN_MODE = "ExitPlanMode"
MCP_PREFIX = "mcp__"
WILDCARD = "*"

ALL_AGENTS_DISALLOWED: frozenset[str] = frozenset({
    "TaskOutput", "TaskStop", "ExitPlanMode", "EnterPlanMode", "AskUserQuestion", AGENT_TOOL,
})
"""Claude Code's ``ALL_AGENT_DISALLOWED_TOOLS`` (EnterPlanMode included; swarm has no such tool yet)."""

CUSTOM_AGENTS_DISALLOWED: frozenset[str] = ALL_AGENTS_DISALLOWED
"""Claude Code's ``CUSTOM_AGENT_DISALLOWED_TOOLS`` is ``new Set([...ALL_AGENT_DISALLOWED_TOOLS])``: the same
list today. It is its own gate so that custom definitions can be held tighter than built-in ones later."""

BACKGROUND_ALLOWED: frozenset[str] = frozenset({
    "Read", "Write", "Edit", "Bash", "Glob", "Grep", "Skill",
    "TaskCreate", "TaskGet", "TaskList", "TaskUpdate", "SendMessage",
})
"""Claude Code's ``ASYNC_AGENT_ALLOWED_TOOLS`` limited to tools swarm has or plans (no WebSearch, WebFetch,
TodoWrite, NotebookEdit, ToolSearch, EnterWorktree/ExitWorktree), plus the task tools and SendMessage that
Claude Code allows an in-process teammate's background agents: swarm teammates coordinate through them."""


@dataclass(frozen=True)
class ToolPool:
    """The tools a child gets and the agent types it may spawn."""

    names: tuple[str, ...]
    """Tool names in the parent's order."""
    spawnable: frozenset[str] | None
    """Agent types named by ``Agent(Explore, Plan)`` in the definition's tools; None = any."""


def tool_pool(available: Sequence[str], *, tools: Sequence[str] | None, disallowed: Sequence[str] = (),
              builtin: bool, background: bool, fork_child: bool = False, main_thread: bool = False,
              permission_mode: str | None = None) -> ToolPool:
    """The tool pool of a child agent given the parent's ``available`` tool names (see the module docstring).

    ``builtin``: the definition is built in (gate 2 is skipped). ``background``:
    the child runs in the background (gate 3). ``fork_child``: the parent's
    list, unchanged. ``main_thread``: the definition runs as a main agent, not
    a subagent (gates skipped). ``permission_mode``: the child's mode
    (``plan`` keeps ExitPlanMode).
    """
    if fork_child:
        return ToolPool(names=tuple(available), spawnable=None)
    names = list(available) if main_thread else [
        name for name in available if _passes_gates(name, builtin=builtin, background=background,
                                                    plan=permission_mode == "plan")]
    wanted, spawnable = _wanted(tools)
    denied = {name for name, _ in _parsed(disallowed)}
    kept = [n for n in names if not _named(n, denied) and (wanted is None or _named(n, wanted))]
    return ToolPool(names=tuple(kept), spawnable=spawnable)


def spawnable_types(tools: Sequence[str] | None) -> frozenset[str] | None:
    """The agent types ``Agent(Explore, Plan)`` entries in ``tools`` allow; None = any (a main thread's limit)."""
    return _wanted(tools)[1]


def _named(name: str, entries: set[str]) -> bool:
    """``name`` is in ``entries``, or an MCP tool whose server an entry names (``mcp__server``, ``mcp__server__*``)."""
    return name in entries or (name.startswith(MCP_PREFIX) and any(covers_server(e, name) for e in entries))


def _passes_gates(name: str, *, builtin: bool, background: bool, plan: bool) -> bool:
    if name.startswith(MCP_PREFIX) or (plan and name == EXIT_PLAN_MODE):
        return True
    if name in ALL_AGENTS_DISALLOWED:
        return False
    if not builtin and name in CUSTOM_AGENTS_DISALLOWED:
        return False
    return not background or name in BACKGROUND_ALLOWED


def _wanted(tools: Sequence[str] | None) -> tuple[set[str] | None, frozenset[str] | None]:
    """The tool names ``tools`` asks for (None = all) and the agent types its ``Agent(...)`` entries allow."""
    if tools is None or [t.strip() for t in tools] == [WILDCARD]:
        return None, None
    wanted: set[str] = set()
    types: set[str] | None = None
    for name, content in _parsed(tools):
        wanted.add(name)
        if name == AGENT_TOOL and content is not None:
            types = (types or set()) | {t.strip() for t in content.split(",") if t.strip()}
    return wanted, None if types is None else frozenset(types)


def _parsed(entries: Sequence[str]) -> list[tuple[str, str | None]]:
    """(tool name, specifier) of each entry in rule syntax; entries that are not are skipped."""
    found = []
    for entry in entries:
        try:
            rule = Rule.parse(entry)
        except UsageError:
            continue
        found.append((rule.tool, rule.content))
    return found
