"""``swarm trust [DIR]``: trust a folder's project configuration, recorded where Claude Code records it."""

from __future__ import annotations

import os
from pathlib import Path

import click

from swarm.agent.trust import is_trusted, trust as record_trust, trusted_folders
from swarm.cli.render import echo
from swarm.errors import UsageError


@click.command("trust")
@click.argument("directory", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--list", "show", is_flag=True, help="List the folders recorded trusted.")
@click.option("--remove", is_flag=True, help="Record DIR as not trusted (a trusted folder above it still counts).")
def trust(directory: Path | None, show: bool, remove: bool) -> None:
    """Trust DIR (default: the current directory) and every folder below it.

    In a trusted folder the project's agent definitions, skills, settings
    files and CLAUDE.md apply; elsewhere only your own (user-level) ones do.
    The answer is recorded in Claude Code's config file
    ($CLAUDE_CONFIG_DIR/.claude.json, else ~/.claude.json) as Claude Code's
    trust dialog records it, so a folder trusted in either tool is trusted in
    both. For one run only, pass --trust to `swarm run`, `spawn` or `up`.
    """
    env = dict(os.environ)
    if show:
        if directory is not None or remove:
            raise UsageError("--list takes no DIR and no --remove; run `swarm trust --list` alone")
        for recorded in trusted_folders(env):
            echo(recorded)
        return
    folder = (directory or Path.cwd()).resolve()
    written = record_trust(folder, env, accepted=not remove)
    if not remove:
        echo(f"trusted {folder} (recorded in {written})")
    elif is_trusted(folder, env):
        echo(f"recorded {folder} as not trusted in {written}; a folder above it is still trusted "
                   "(`swarm trust --list`)")
    else:
        echo(f"recorded {folder} as not trusted (in {written})")
