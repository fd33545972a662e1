"""``swarm agents``: the agent definitions active in a directory, where each came from and what it replaced."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from swarm.agent.definitions import AgentDefinition, load_agents
from swarm.agent.workspace import untrusted_warning
from swarm.cli.options import json_option, warn
from swarm.cli.render import emit_json, one_line, table


@click.command()
@json_option
@click.option("--cwd", "cwd", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Directory whose project definitions count [default: the current directory].")
@click.option("--agents", "agents_json", metavar="JSON", default=None,
              help='Command-line definitions, e.g. \'{"reviewer": {"description": "...", "prompt": "..."}}\'.')
def agents(as_json: bool, cwd: Path | None, agents_json: str | None) -> None:
    """List the active agent definitions: built-in < user < project < --agents.

    User definitions are in $CLAUDE_CONFIG_DIR/agents (default ~/.claude/agents),
    project ones in .claude/agents and .swarm/agents from the repository root
    down to the directory, in a trusted folder only (`swarm trust`). Files
    that cannot be loaded are named on stderr.
    """
    where = cwd or Path.cwd()
    untrusted = untrusted_warning(where, os.environ)
    if untrusted is not None:
        warn(untrusted)
    catalog = load_agents(where, env=os.environ, cli_json=agents_json)
    for warning in catalog.warnings:
        warn(warning)
    found = [catalog.definitions[name] for name in catalog.names()]
    if as_json:
        emit_json([_as_dict(d) for d in found])
        return
    table(["name", "source", "model", "tools", "overrides", "description"], [
        [d.name, d.source, d.model or "inherit", _tools(d), d.overrides or "-", one_line(d.description, 60)]
        for d in found
    ])


def _tools(definition: AgentDefinition) -> str:
    shown = "all" if definition.tools is None or definition.tools == ["*"] else ", ".join(definition.tools)
    return shown + (f" (not {', '.join(definition.disallowed_tools)})" if definition.disallowed_tools else "")


def _as_dict(definition: AgentDefinition) -> dict[str, Any]:
    return {"name": definition.name, "description": definition.description, "source": definition.source,
            "path": str(definition.path) if definition.path else None, "overrides": definition.overrides,
            "tools": definition.tools, "disallowed_tools": definition.disallowed_tools, "model": definition.model,
            "background": definition.background, "color": definition.color, "read_only": definition.read_only,
            "permission_mode": definition.permission_mode, "omit_claude_md": definition.omit_claude_md,
            "critical_system_reminder": definition.critical_system_reminder or None}
