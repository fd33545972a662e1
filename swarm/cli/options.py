"""Options and context shared by commands."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import click

from swarm.cli.render import echo
from swarm.core.home import Home
from swarm.core.names import validate_name
from swarm.core.protocol import CLAUDE_RUNTIME
from swarm.errors import InvalidNameError

if TYPE_CHECKING:
    from swarm.models.factory import Choice
    from swarm.runtime.spawn import SpawnRequest

F = TypeVar("F", bound=Callable[..., Any])


def home_of(ctx: click.Context) -> Home:
    home = ctx.find_object(Home)
    if home is None:  # a command invoked outside the group (tests)
        home = Home.from_env()
        ctx.obj = home
    return home


def _name_callback(kind: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    def check(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is None:
            return value
        try:
            return validate_name(value, kind)
        except InvalidNameError as exc:
            raise click.BadParameter(str(exc)) from exc

    return check


def team_option(func: F) -> F:
    """``--team T`` (default ``$SWARM_TEAM``), validated as a name."""
    return click.option(
        "--team", "-t", envvar="SWARM_TEAM", required=True, show_envvar=True,
        callback=_name_callback("team name"), help="Team name.",
    )(func)


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")(func)


team_name_argument = click.argument("name", callback=_name_callback("team name"))
agent_name_callback = _name_callback("agent name")


def warn(message: str) -> None:
    """One warning line for the person on stderr (``swarm: warning: ...``)."""
    echo(f"swarm: warning: {message}", err=True)


def say_model(choice: Choice, who: str = "") -> None:
    """Tell the person which model an agent runs: always for the echoing offline default, else on a terminal."""
    if (choice.scripted and choice.playbook is None) or sys.stderr.isatty():
        echo(f"swarm: {who}{choice.notice()}", err=True)


def say_teammate_model(request: SpawnRequest, env: Mapping[str, str]) -> None:
    """``say_model`` for a teammate ``swarm spawn`` or ``swarm up`` starts (a Claude Code teammate picks its own)."""
    # imported here: the commands that start no agent do not load the model layer
    from swarm.models.factory import choose_model

    if request.runtime != CLAUDE_RUNTIME:
        say_model(choose_model(request.model, playbook=request.playbook, env=env), f"{request.name}'s ")


tmux_socket_option = click.option(
    "--tmux-socket", envvar="SWARM_TMUX_SOCKET", show_envvar=True, default=None,
    help="tmux server: a socket name (-L) or a socket path (-S).")


trust_option = click.option(
    "--trust", "trust", is_flag=True,
    help="Trust the folder's project configuration (agents, skills, settings, CLAUDE.md) for this run and the "
         "teammates it starts there; `swarm trust DIR` records it instead.")


def gate_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--max-cost`` and ``--max-concurrent-requests``: the team's gate on model requests."""
    command = click.option("--max-concurrent-requests", type=click.IntRange(min=1), default=None,
                           help="Model requests the whole team has in flight at most [default: the team file's "
                                "max_concurrent_requests, else 6].")(command)
    return click.option("--max-cost", type=click.FloatRange(min=0, min_open=True), default=None, metavar="USD",
                        help="Budget in US dollars: once the team has spent it, no new model call starts "
                             "[default: the team file's max_cost, else none].")(command)


def stall_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--stall-after SECONDS``: the watchdog on teammates that hold a task but do nothing."""
    return click.option("--stall-after", type=click.FloatRange(min=0, min_open=True), default=None,
                        metavar="SECONDS",
                        help="Nudge a teammate that holds a task in progress but has done nothing this long; "
                             "tell the lead if it still does nothing [default: the team file's stall_after, "
                             "else off].")(command)
