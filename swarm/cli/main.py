"""The ``swarm`` command: a thin click front over the runtime.

Exit codes: 0 ok, 1 runtime error, 2 usage error, 130 interrupted. Every
failure is one line on stderr, never a traceback: a ``SwarmError`` prints its
message; an ``OSError`` that reached the top (a file a command opened itself)
is worded by ``storage_error``; stdout closed early (``| head``) ends quietly
(click's exit 1, nothing more printed).

Ctrl-C: while this module and click are imported, SIGINT ends the process at
once with the one line (there is nothing to clean up yet); once the command
runs, it is a ``KeyboardInterrupt`` the command may clean up after.
"""

from __future__ import annotations

import _signal  # the C module: importing ``signal`` itself takes long enough to be interrupted
import os
import sys
from types import FrameType
from typing import Any


def _interrupted_while_loading(signum: int, frame: FrameType | None) -> None:
    os.write(2, b"swarm: error: interrupted\n")
    os._exit(130)


def _swap_sigint(handler: Any) -> Any:
    """Install ``handler`` for SIGINT and return the previous one (None off the main thread: left alone)."""
    try:
        return _signal.signal(_signal.SIGINT, handler)
    except ValueError:
        return None


_SIGINT_BEFORE = _swap_sigint(_interrupted_while_loading)

import difflib  # after the SIGINT handler above is in place
import importlib
import logging

import click

from swarm import __version__
from swarm.cli.render import echo
from swarm.core.fileio import storage_error
from swarm.core.home import Home
from swarm.core.text import TerminalLogFormatter, flat
from swarm.errors import SwarmError
from swarm.startup import hold_collector, startup_done

COMMANDS: dict[str, str] = {
    "agents": "swarm.cli.agents:agents",
    "skills": "swarm.cli.skills:skills",
    "hooks": "swarm.cli.hooks:hooks",
    "demo": "swarm.cli.demo:demo",
    "team": "swarm.cli.team:team",
    "send": "swarm.cli.messages:send",
    "inbox": "swarm.cli.messages:inbox",
    "tasks": "swarm.cli.tasks:tasks",
    "task": "swarm.cli.tasks:task",
    "run": "swarm.cli.run:run",
    "spawn": "swarm.cli.spawn:spawn",
    "host": "swarm.cli.hosts:host",
    "hosts": "swarm.cli.hosts:hosts",
    "status": "swarm.cli.teammates:status",
    "top": "swarm.cli.top:top",
    "logs": "swarm.cli.teammates:logs",
    "attach": "swarm.cli.teammates:attach",
    "shutdown": "swarm.cli.teammates:shutdown",
    "kill": "swarm.cli.teammates:kill",
    "permissions": "swarm.cli.permissions:permissions",
    "approve": "swarm.cli.permissions:approve",
    "deny": "swarm.cli.permissions:deny",
    "plan": "swarm.cli.permissions:plan",
    "worktrees": "swarm.cli.worktrees:worktrees",
    "merge": "swarm.cli.merge:merge",
    "up": "swarm.cli.up:up",
    "down": "swarm.cli.up:down",
    "trust": "swarm.cli.trust:trust",
    "mcp": "swarm.cli.mcp:mcp",
    "doctor": "swarm.cli.doctor:doctor",
}
"""Command name -> ``module:attribute``; a command's module is imported only when it runs."""


class SwarmGroup(click.Group):
    """Loads commands lazily; every failure ends as one line on stderr and an exit code (1 runtime, 2 usage)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, attr = target.split(":")
        command: click.Command = getattr(importlib.import_module(module), attr)
        startup_done()  # the command's modules are loaded: what `main` held off ends here
        return command

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None, list[str]]:
        name = click.utils.make_str(args[0])
        if name not in COMMANDS and not name.startswith("-"):
            close = difflib.get_close_matches(name, list(COMMANDS), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            ctx.fail(f"No such command {name!r}.{hint}")
        return super().resolve_command(ctx, args)

    def main(self, *args: Any, **kwargs: Any) -> Any:  # click entry point
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
        except OSError as exc:  # a command's own file access; core translates its own
            _fail(str(storage_error(exc, None, "use")), 1)
        sys.exit(result if isinstance(result, int) else 0)


def _fail(message: str, code: int) -> None:
    echo(f"swarm: error: {flat(message, None)}", err=True)
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
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(TerminalLogFormatter("swarm: %(levelname)s: %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])
    ctx.obj = Home.from_env(home)


def main() -> None:
    hold_collector()  # the command's imports run without the collector (swarm.startup)
    cli(prog_name="swarm")


if _SIGINT_BEFORE is not None:
    _swap_sigint(_SIGINT_BEFORE)  # loaded: Ctrl-C is a KeyboardInterrupt again (or what a host set)
