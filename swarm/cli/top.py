"""``swarm top`` (also ``swarm status --watch``): the team as a live full-screen table (``interactive/top.py``)."""

from __future__ import annotations

import os
import sys

import click

from swarm.cli.options import home_of, team_option
from swarm.core.home import Home
from swarm.errors import UsageError


@click.command()
@team_option
@click.pass_context
def top(ctx: click.Context, team: str) -> None:
    """Watch the team live: each member's state, task, last action, tokens, cost and open requests.

    Redrawn when the team's files change. Keys: up/down choose a teammate,
    Enter opens its live view, a/d approve/deny its oldest open request,
    s asks it to shut down, q quits.
    """
    run_top(home_of(ctx), team)


def run_top(home: Home, team: str) -> None:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("swarm top needs a terminal; without one use `swarm status --team TEAM --json`")
    from swarm.core.teams import TeamStore
    from swarm.interactive.top import Top

    TeamStore(home).get(team)  # a missing team is one line, before the screen is taken
    Top(home, team, dict(os.environ)).run()
