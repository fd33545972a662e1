"""``swarm mcp list|get|approve``: the MCP servers an agent started here would get, and project approvals."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from swarm.agent.mcp.approval import NEEDS_APPROVAL, approve as record_approval, declared_servers
from swarm.agent.mcp.config import ServerEntry
from swarm.agent.mcp.connections import McpConnections, ServerStatus
from swarm.agent.mcp.tools import tool_name
from swarm.cli.render import echo, emit_json, table
from swarm.errors import NotFoundError, UsageError


@click.group("mcp")
def mcp() -> None:
    """MCP servers from ~/.claude.json, the project's .mcp.json and approvals, as Claude Code reads them."""


@mcp.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON document: a list of servers.")
def list_servers(as_json: bool) -> None:
    """Each server declared for the current directory: where from, its state (each startable one is
    started to check it, then stopped) and how many tools it offers."""
    statuses = _check(None)
    if as_json:
        emit_json([_document(s) for s in statuses])
        return
    if not statuses:
        echo("no MCP servers: add them to .mcp.json or ~/.claude.json (mcpServers)")
        return
    table(["server", "scope", "source", "transport", "state", "tools"],
          [[s.name, s.scope, s.source, s.transport, _state(s), len(s.tools)] for s in statuses])


@mcp.command("get")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="One JSON document.")
def get(name: str, as_json: bool) -> None:
    """One server: its configuration, state and tools."""
    statuses = _check(name)
    if not statuses:
        raise NotFoundError(f"no MCP server {name!r} here; `swarm mcp list` shows the servers")
    status, entry = statuses[0], _entries()[name]
    if as_json:
        emit_json({**_document(status), "config": entry.config.model_dump(mode="json")})
        return
    config = entry.config
    target = f"{config.command} {' '.join(config.args)}".strip() if config.type == "stdio" else config.url
    for label, value in (("server", status.name), ("scope", status.scope), ("source", status.source),
                         ("transport", status.transport), ("target", target), ("state", _state(status))):
        echo(f"{label}: {value}")
    for tool in status.tools:
        first = next(iter((tool.description or "").strip().splitlines()), "")
        echo(f"  {tool_name(status.name, tool.name)}  {first}")


@mcp.command("approve")
@click.argument("name")
@click.option("--reject", is_flag=True, help="Record the server as rejected for this folder instead.")
def approve(name: str, reject: bool) -> None:
    """Approve the project (.mcp.json) server NAME for this folder, as Claude Code's prompt records it."""
    entry = _entries().get(name)
    if entry is None or entry.scope != "project":
        raise UsageError(f"{name!r} is no server of this folder's .mcp.json; `swarm mcp list` shows the servers")
    written = record_approval(Path.cwd(), os.environ, name, enabled=not reject)
    echo(f"{'rejected' if reject else 'approved'} MCP server {name} for {Path.cwd()} (recorded in {written})")


def _entries() -> dict[str, ServerEntry]:
    return declared_servers(Path.cwd(), os.environ, None).servers


def _check(only: str | None) -> list[ServerStatus]:
    """Start the servers (``only`` that one), wait for them, and return their states; everything is stopped."""
    declared = declared_servers(Path.cwd(), os.environ, None)
    for warning in declared.warnings:
        echo(warning, err=True)
    entries = [e for e in declared.servers.values() if only is None or e.name == only]
    connections = McpConnections(Path.cwd(), os.environ, note=lambda _text: None)
    try:
        connections.start(entries)
        connections.wait()
        return connections.statuses()
    finally:
        connections.close()


def _state(status: ServerStatus) -> str:
    if status.state == NEEDS_APPROVAL:
        return f"{NEEDS_APPROVAL} (`swarm mcp approve {status.name}`)"
    return f"{status.state}: {status.error}" if status.error else status.state


def _document(status: ServerStatus) -> dict[str, Any]:
    return {"name": status.name, "scope": status.scope, "source": status.source, "transport": status.transport,
            "state": status.state, "error": status.error, "tool_count": len(status.tools),
            "tools": [tool_name(status.name, t.name) for t in status.tools]}
