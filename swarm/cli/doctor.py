"""``swarm doctor``: the first command to run: credentials, the model, tools, the home; one line each."""

from __future__ import annotations

import os

import click

from swarm.cli.render import echo, emit_json
from swarm.core.home import Home
from swarm.runtime.doctor import failed, run_checks


@click.command("doctor")
@click.option("--model", default=None, help="Ask this model instead of the default (alias or id).")
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON.")
@click.pass_obj
def doctor(home: Home, model: str | None, as_json: bool) -> int:
    """Check that swarm can do its job here, one line each: ok, warn or fail.

    Which credentials reach Claude, whether the model answers a one-token
    request (the API's own error if not), tmux, git, ripgrep, whether the
    swarm home is writable, whether Claude Code is installed (for mixed
    teams), and whether the Bash sandbox (bubblewrap, socat) starts here.
    Exits 1 when something the main job needs fails; a missing tmux,
    ripgrep, Claude Code or sandbox is only a warning.
    """
    from swarm.models.aliases import expand_alias

    env = dict(os.environ)
    checks = run_checks(home, env, model=expand_alias(model, env) if model else None)
    if as_json:
        emit_json({"ok": not failed(checks), "checks": [c.model_dump() for c in checks]})
    else:
        width = max(len(c.check) for c in checks)
        for c in checks:
            echo(f"{c.status:<4}  {c.check:<{width}}  {c.detail}")
    return 1 if failed(checks) else 0
