"""``swarm hooks``: the hooks an agent started in a directory would run, and where each came from."""

from __future__ import annotations

import os
from pathlib import Path

import click

from swarm.agent.definitions import load_agents
from swarm.agent.hooks.config import HookSet, definition_hooks, settings_hooks
from swarm.agent.workspace import untrusted_warning
from swarm.cli.options import json_option, warn
from swarm.cli.render import echo, emit_json, one_line, table
from swarm.errors import UsageError


@click.command()
@json_option
@click.option("--cwd", "cwd", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Directory whose project settings count [default: the current directory].")
@click.option("--agent", "agent_name", default=None, metavar="NAME",
              help="Also list the hooks of this agent definition's frontmatter (`swarm agents` lists them).")
def hooks(as_json: bool, cwd: Path | None, agent_name: str | None) -> None:
    """List the active hooks: user settings, then project and local settings, then a definition's.

    Hooks come from the `hooks` key of $CLAUDE_CONFIG_DIR/settings.json
    (default ~/.claude), .claude/settings.json, .swarm/settings.json and
    .claude/settings.local.json (Claude Code's format), and from an agent
    definition's `hooks:`. Project hooks count in a trusted folder only
    (`swarm trust`); a teammate runs them only if the file is as the lead
    recorded it when the team first spawned there. Entries that cannot be read
    are named on stderr.
    """
    where = (cwd or Path.cwd()).resolve()
    untrusted = untrusted_warning(where, os.environ)
    if untrusted is not None:
        warn(untrusted)
    found = settings_hooks(where, os.environ, None)
    if agent_name is not None:
        definition = load_agents(where, env=os.environ).get(agent_name)
        if definition is None:
            raise UsageError(f"no agent definition {agent_name!r}; `swarm agents` lists them")
        found = found.plus(definition_hooks(definition, subagent=False))
    _show(found, as_json)


def _show(found: HookSet, as_json: bool) -> None:
    for warning in found.warnings:
        warn(warning)
    if found.disabled:
        warn('"disableAllHooks": true in a settings file: none of these hooks runs')
    if as_json:
        emit_json([hook.as_dict() for hook in found.hooks])
        return
    if not found.hooks:
        echo("no hooks: add them under \"hooks\" in .claude/settings.json or ~/.claude/settings.json")
        return
    table(["event", "matcher", "command", "timeout", "source", "from"], [
        [h.event, h.matcher or "*", one_line(h.command, 60), f"{h.timeout:g}s", h.source, h.origin]
        for h in found.hooks
    ])
