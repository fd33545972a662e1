"""``swarm skills``: the skills active in a directory, where each came from, and how it may be used."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from swarm.agent.skills import Skill, load_skills
from swarm.agent.workspace import untrusted_warning
from swarm.cli.options import json_option, warn
from swarm.cli.render import emit_json, one_line, table


@click.command()
@json_option
@click.option("--cwd", "cwd", type=click.Path(exists=True, file_okay=False, path_type=Path), default=None,
              help="Directory whose project skills count [default: the current directory].")
def skills(as_json: bool, cwd: Path | None) -> None:
    """List the active skills: legacy commands < user skills < project skills.

    User skills are in $CLAUDE_CONFIG_DIR/skills/<name>/SKILL.md (default
    ~/.claude/skills), project ones in .claude/skills and .swarm/skills from the
    repository root down to the directory; .claude/commands/<name>.md files are
    commands; project ones count in a trusted folder only (`swarm trust`).
    Files that cannot be loaded are named on stderr.
    """
    where = cwd or Path.cwd()
    untrusted = untrusted_warning(where, os.environ)
    if untrusted is not None:
        warn(untrusted)
    catalog = load_skills(where, env=os.environ)
    for warning in catalog.warnings:
        warn(warning)
    found = [catalog.skills[name] for name in catalog.names()]
    if as_json:
        emit_json([_as_dict(skill) for skill in found])
        return
    table(["name", "source", "invoke", "context", "agent", "allowed-tools", "description"], [
        [s.name, s.source, _invocation(s), s.context or "-", s.agent or "-",
         one_line(", ".join(s.allowed_tools), 30) or "-", one_line(s.description, 60)]
        for s in found
    ])


def _invocation(skill: Skill) -> str:
    """Who may invoke it: ``model,user``, ``model``, ``user`` or ``preload`` (only a definition's skills: list)."""
    who = [kind for kind, ok in (("model", not skill.disable_model_invocation), ("user", skill.user_invocable)) if ok]
    return ",".join(who) or "preload"


def _as_dict(skill: Skill) -> dict[str, Any]:
    return {"name": skill.name, "description": skill.description, "source": skill.source, "path": str(skill.path),
            "directory": str(skill.directory), "context": skill.context, "agent": skill.agent,
            "model": skill.model, "allowed_tools": skill.allowed_tools,
            "disable_model_invocation": skill.disable_model_invocation, "user_invocable": skill.user_invocable,
            "argument_hint": skill.argument_hint}
