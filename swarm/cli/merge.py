"""``swarm merge [NAMES…]``: the merge queue (``swarm.runtime.merge_queue``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click

from swarm.cli.options import home_of, json_option, team_option
from swarm.cli.render import echo, emit_json, one_line, table
from swarm.runtime.merge_queue import QueueRun, run_queue


@click.command()
@click.argument("names", nargs=-1)
@team_option
@click.option("--into", metavar="BRANCH", default=None,
              help="Branch to merge into [default: the branch checked out where the teammates' repository is].")
@click.option("--test", "test", metavar="CMD", default=None,
              help="Shell command run after each merge (in a scratch checkout of the result); a failure stops "
                   "the queue and leaves the branch as it was.")
@click.option("--wait", type=click.FloatRange(min=0), default=0.0, show_default=True, metavar="SECONDS",
              help="After a conflict or failing test sent to a running teammate, wait this long for its fix (a new "
                   "commit on its branch) and try again.")
@click.option("--cwd", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None,
              help="The repository, when no teammate has a worktree [default: current directory].")
@json_option
@click.pass_context
def merge(ctx: click.Context, names: tuple[str, ...], team: str, into: str | None, test: str | None,
          wait: float, cwd: Path | None, as_json: bool) -> None:
    """Merge teammates' branches (NAMES, or all that have one) one at a time, in the order of their tasks.

    Each merge is tried in a scratch worktree and --test runs there; only a
    clean merge whose test passes moves the target branch. A conflict or a
    failing test stops the queue with the target as it was, and a teammate
    that still runs is sent the problem to fix; with --wait the queue waits for
    the fix and tries again, else run `swarm merge` again after.
    """
    run = run_queue(home_of(ctx), team, list(names), into=into, test=test, cwd=(cwd or Path.cwd()).resolve(),
                    wait=wait)
    if as_json:
        emit_json({"into": run.into, "before": run.before, "ok": run.ok,
                   "steps": [dataclasses.asdict(s) for s in run.steps]})
    else:
        _print(run)
    if not run.ok:
        ctx.exit(1)


def _print(run: QueueRun) -> None:
    if not run.steps:
        echo("nothing to merge: no teammate of this team has a branch")
        return
    table(["teammate", "branch", "result", "detail"],
          [[s.name, s.branch, s.result.replace("_", " "), one_line(s.detail or (s.sha or "")[:12], 70)]
           for s in run.steps])
    stopped = next((s for s in run.steps if s.result in ("conflict", "test_failed")), None)
    if stopped is not None:
        told = f"; {stopped.name} was sent the problem to fix" if stopped.told else ""
        echo(f"queue stopped at {stopped.name}: {run.into} is unchanged by it{told}; run `swarm merge` again after")
