"""The ``swarm`` command: a thin click front over the runtime.

Exit codes: 0 ok, 1 runtime error, 2 usage error. Only ``SwarmError`` is
caught here; it is printed as one line on stderr.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import click

from swarm import __version__
from swarm.cli.demo import demo
from swarm.cli.messages import inbox, send
from swarm.cli.permissions import approve, deny, permissions, plan
from swarm.cli.run import run
from swarm.cli.up import down, up
from swarm.cli.team import team
from swarm.cli.teammates import attach, kill, logs, shutdown, spawn, status
from swarm.cli.worktrees import worktrees
from swarm.core.home import Home
from swarm.errors import SwarmError


class SwarmGroup(click.Group):
    """Every failure ends as one line on stderr and an exit code (1 runtime, 2 usage)."""

    def main(self, *args: Any, **kwargs: Any) -> Any:  # noqa: D102 - click entry point
        kwargs["standalone_mode"] = False
        try:
            result = super().main(*args, **kwargs)
        except SwarmError as exc:
            _fail(str(exc), exc.exit_code)
        except click.UsageError as exc:
            hint = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx else ""
            _fail(f"{exc.format_message()}{hint}", 2)
        except click.ClickException as exc:
            _fail(exc.format_message(), exc.exit_code)
        except (click.Abort, KeyboardInterrupt):
            _fail("interrupted", 130)
        sys.exit(result if isinstance(result, int) else 0)


def _fail(message: str, code: int) -> None:
    click.echo(f"swarm: error: {' '.join(message.split())}", err=True)
    sys.exit(code)


@click.group(cls=SwarmGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--home", envvar="SWARM_HOME", type=click.Path(file_okay=False), show_envvar=True,
              help="Swarm home directory [default: ~/.swarm].")
@click.option("-v", "--verbose", count=True, help="Log more (-v info, -vv debug) to stderr.")
@click.version_option(__version__, prog_name="swarm")
@click.pass_context
def cli(ctx: click.Context, home: str | None, verbose: int) -> None:
    """Run teams of AI coding agents as real processes that talk through inboxes."""
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, stream=sys.stderr, format="swarm: %(levelname)s: %(name)s: %(message)s")
    ctx.obj = Home.from_env(home)


cli.add_command(team)
cli.add_command(send)
cli.add_command(inbox)
cli.add_command(run)
cli.add_command(worktrees)
for command in (spawn, status, logs, attach, shutdown, kill, permissions, approve, deny, plan, up, down, demo):
    cli.add_command(command)


def main() -> None:
    cli(prog_name="swarm")
