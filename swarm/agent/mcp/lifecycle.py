"""Which MCP servers an agent gets, and when they start and end (the seeds' ``runAgent`` steps 5, 11 and 15).

- **A process's own agent** (``swarm run``, a teammate): ``process_servers``
  starts every server declared for its cwd (``approval.declared_servers``)
  and its definition's inline ones, in the background; the agent settles
  them (waits while any is still starting, at most ``MCP_TIMEOUT``) before
  its first model call, and the process closes them when it ends.
- **A subagent** (``agent_servers``): a name in its definition's
  ``mcpServers:`` is the parent's connection (shared, memoized, it outlives
  the child); a ``{name: config}`` entry is started for this child only and
  closed in its ``finally``. It waits for the servers it names (up to
  ``REQUIRED_WAIT``) before its tool list is taken; a server in its
  ``requiredMcpServers:`` that is not connected by then fails the start with
  a clear error. It also sees its parent's MCP tools, filtered by its
  ``tools:`` like any tool.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from swarm.agent.definitions import AgentDefinition
from swarm.agent.mcp.approval import declared_servers
from swarm.agent.mcp.config import inline_servers
from swarm.agent.mcp.connections import McpConnections
from swarm.agent.mcp.tools import McpToolset
from swarm.agent.tool_api.context import ToolError
from swarm.errors import UsageError

OFF_VAR = "SWARM_MCP"
"""``SWARM_MCP=0``: no MCP server starts (``swarm demo`` sets it: the offline demo never starts the person's servers);
teammates inherit it."""
REQUIRED_WAIT = 30.0
"""Seconds an agent waits for the servers its definition names (the seeds' step 5)."""


class McpUnavailable(UsageError):
    """A definition requires an MCP server that is not connected."""


def process_servers(cwd: Path, env: Mapping[str, str], definition: AgentDefinition | None, *,
                    recorded: Mapping[str, str] | None, note: Callable[[str], None]) -> McpConnections:
    """The connections of a process's main agent, started (not waited for); each config warning to ``note``."""
    connections = McpConnections(cwd, env, note=note)
    if env.get(OFF_VAR, "").strip() == "0":
        return connections
    declared = declared_servers(cwd, env, recorded)
    for warning in declared.warnings:
        note(warning)
    entries = list(declared.servers.values())
    if definition is not None:
        _names, inline = inline_servers(definition.mcp_servers, source=definition.origin, env=env)
        for warning in inline.warnings:
            note(warning)
        entries = [e for e in entries if e.name not in inline.servers] + list(inline.servers.values())
    connections.start(entries)
    return connections


def agent_servers(definition: AgentDefinition, parent: McpConnections | None, cwd: Path, env: Mapping[str, str],
                  note: Callable[[str], None]) -> McpConnections | None:
    """A subagent's own (inline) connections, started and waited for; None when it has none.

    Raises McpUnavailable when a required server is not connected in time (its own are closed first).
    """
    names, inline = inline_servers(definition.mcp_servers, source=definition.origin, env=env)
    for warning in inline.warnings:
        note(warning)
    own = None
    if inline.servers:
        own = McpConnections(cwd, env, note=note)
        own.start(inline.servers.values())
    wanted = set(names) | set(definition.required_mcp_servers)
    try:
        if own is not None:
            own.wait(timeout=REQUIRED_WAIT)
        if parent is not None:
            parent.wait([n for n in wanted if n not in inline.servers], timeout=REQUIRED_WAIT)
        for name in sorted(wanted):
            status = (own.status(name) if own is not None else None) or (parent.status(name) if parent else None)
            if status is None:
                problem = "not configured (`swarm mcp list` shows the servers)"
            elif status.state != "connected":
                problem = f"{status.state}{': ' + status.error if status.error else ''}"
            else:
                continue
            if name in definition.required_mcp_servers:
                raise McpUnavailable(f"agent {definition.name} requires MCP server {name}, which is {problem}")
            note(f"agent {definition.name}: MCP server {name} is {problem}")
    except BaseException:
        if own is not None:
            own.close()
        raise
    return own


@contextmanager
def child_servers(definition: AgentDefinition, parent: McpConnections | None, cwd: Path, env: Mapping[str, str],
                  note: Callable[[str], None]) -> Iterator[tuple[McpConnections | None, McpToolset | None]]:
    """A subagent's own connections (``agent_servers``) and the MCP tools it sees (its own, then its parent's);
    a ToolError for the parent's model when a required server is missing; its own are closed if the body fails."""
    try:
        own = agent_servers(definition, parent, cwd, env, note)
    except McpUnavailable as exc:
        raise ToolError(str(exc)) from None
    servers = [c for c in (own, parent) if c is not None]
    try:
        yield own, McpToolset(*servers) if servers else None
    except BaseException:
        if own is not None:
            own.close()
        raise


def require(definition: AgentDefinition | None, connections: McpConnections) -> None:
    """For a process's own agent: wait for its definition's required servers; McpUnavailable if one is not up."""
    if definition is None or not definition.required_mcp_servers:
        return
    connections.wait(definition.required_mcp_servers, timeout=REQUIRED_WAIT)
    for name in definition.required_mcp_servers:
        status = connections.status(name)
        if status is None or status.state != "connected":
            why = "not configured" if status is None else f"{status.state}: {status.error}"
            raise McpUnavailable(f"agent {definition.name} requires MCP server {name}, which is {why}; "
                                 "`swarm mcp list` shows the servers")
