"""A folder's project configuration, and the one check before agents start there (``swarm.agent.trust``).

The loaders themselves ignore a folder's project configuration until it is
trusted (``trust.is_trusted``); this module is what the commands that start
agents ask first, so the person is never surprised by configuration quietly
not applying:

- ``project_configuration``: what a trusted folder would add — the
  definition, skill and command directories, CLAUDE.md files, ``.mcp.json``
  files and settings files the loaders would read (each loader's own list of where they are);
- ``grant_or_refuse``: for a command that starts agents without a person to
  ask (``swarm run -p``, ``swarm spawn``, ``swarm up``): ``--trust`` grants the
  folder for this run (``trust.TRUST_VAR`` in the environment the agents get);
  otherwise an untrusted folder with project configuration is a one-line
  ``UsageError`` that says how to trust it, before anything starts;
- ``untrusted_warning``: the one line for the person where the run goes on
  without the project's configuration.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from swarm.agent.config_files import claude_config_dir, directories_down_to, owned_by_user, project_root
from swarm.agent.definitions import AGENT_DIRS
from swarm.agent.instructions import PROJECT_FILES
from swarm.agent.mcp.config import MCP_JSON
from swarm.agent.permissions.paths import SETTINGS_FILES
from swarm.agent.skills.catalog import COMMAND_DIR, SKILL_DIRS
from swarm.agent.trust import TRUST_VAR, is_trusted
from swarm.errors import UsageError

SHOWN = 3
"""Project configuration entries a message names; the rest are counted."""


def project_configuration(cwd: Path, env: Mapping[str, str]) -> list[Path]:
    """Every project configuration file or directory the loaders would read for ``cwd`` if it were trusted."""
    user = claude_config_dir(env).resolve()
    found: list[Path] = []
    for directory in directories_down_to(cwd):
        for sub in (*AGENT_DIRS, *SKILL_DIRS, COMMAND_DIR):
            candidate = directory / sub
            if candidate.is_dir() and not candidate.resolve().is_relative_to(user):
                found.append(candidate)
        found.extend(directory / name for name in (*PROJECT_FILES, MCP_JSON) if (directory / name).is_file())
    here = cwd.resolve()
    if owned_by_user(here):
        found.extend(here / name for name in SETTINGS_FILES if (here / name).is_file())
    return found


def configuration_names(folder: Path, found: list[Path]) -> str:
    """``.claude/agents, CLAUDE.md and 2 more``: the entries relative to ``folder`` where they are below it."""
    names = [str(p.relative_to(folder)) if p.is_relative_to(folder) else str(p) for p in found]
    more = f" and {len(names) - SHOWN} more" if len(names) > SHOWN else ""
    return ", ".join(names[:SHOWN]) + more


def grant_or_refuse(cwd: Path, env: Mapping[str, str], *, trust: bool) -> dict[str, str]:
    """The environment agents started in ``cwd`` get: ``env``, with the project granted for this run if ``trust``.

    UsageError (one line, saying how to trust it) when the folder is not trusted and has project
    configuration that would otherwise silently not apply.
    """
    folder = project_root(cwd)
    if trust:
        return {**env, TRUST_VAR: str(folder)}
    if not is_trusted(cwd, env):
        found = project_configuration(cwd, env)
        if found:
            raise UsageError(f"the folder {folder} has project configuration ({configuration_names(folder, found)}) "
                             f"and is not trusted: run `swarm trust {folder}` or pass --trust")
    return dict(env)


def untrusted_warning(cwd: Path, env: Mapping[str, str]) -> str | None:
    """The one line to tell the person that ``cwd``'s project configuration is ignored; None if nothing is."""
    if is_trusted(cwd, env):
        return None
    found = project_configuration(cwd, env)
    if not found:
        return None
    folder = project_root(cwd)
    return (f"the folder {folder} is not trusted: its project configuration "
            f"({configuration_names(folder, found)}) is ignored; `swarm trust {folder}` trusts it")
