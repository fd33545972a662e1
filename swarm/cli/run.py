"""``swarm run -p PROMPT``: one headless agent; only the final answer goes to stdout."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import click

from swarm.agent.headless import run_headless
from swarm.agent.limits import Limits
from swarm.errors import SwarmError
from swarm.models.factory import make_provider


@click.command("run")
@click.option("-p", "--prompt", required=True, help="The task; '-' reads it from stdin.")
@click.option("--model", "-m", default=None, help="Model id, or 'scripted[:PLAYBOOK]' for the offline model.")
@click.option("--playbook", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="Run the offline scripted model with this playbook (TOML or JSON).")
@click.option("--cwd", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None,
              help="Working directory for the tools [default: current directory].")
@click.option("--max-turns", type=click.IntRange(min=0), default=0, help="Most model calls; 0 = unlimited.")
@click.option("--max-tokens", "token_budget", type=click.IntRange(min=0), default=0,
              help="Token budget for the run; 0 = unlimited.")
@click.option("--timeout", type=click.FloatRange(min=0), default=0, help="Wall-time limit in seconds; 0 = unlimited.")
@click.option("--transcript", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Append the conversation to this JSONL file.")
@click.option("--allow-writes-outside-cwd", is_flag=True, help="Let Write/Edit touch files outside --cwd.")
def run(prompt: str, model: str | None, playbook: Path | None, cwd: Path | None, max_turns: int,
        token_budget: int, timeout: float, transcript: Path | None, allow_writes_outside_cwd: bool) -> None:
    """Run one agent on PROMPT with the core tools and print its final answer.

    Diagnostics go to stderr. Ctrl-C stops the agent after its current step;
    a second Ctrl-C aborts at once.
    """
    if prompt == "-":
        prompt = sys.stdin.read()
    provider = make_provider(model, playbook=playbook, env=dict(os.environ),
                             variables={"agent_name": "agent", "team": ""})
    cancel = threading.Event()
    previous = signal.signal(signal.SIGINT, _first_interrupt(cancel))
    try:
        result = run_headless(prompt, provider, cwd=(cwd or Path.cwd()).resolve(),
                              limits=Limits(max_turns=max_turns, max_tokens=token_budget, max_seconds=timeout),
                              transcript=transcript, confine_writes=not allow_writes_outside_cwd, cancel=cancel)
    finally:
        signal.signal(signal.SIGINT, previous)
        provider.close()
    if not result.ok:
        raise SwarmError(f"agent stopped ({result.stop_reason}): {result.detail}")
    click.echo(result.text)


def _first_interrupt(cancel: threading.Event) -> Callable[[int, FrameType | None], None]:
    """SIGINT handler: the first Ctrl-C asks the agent to stop after its step, the second aborts."""
    def handler(signum: int, frame: FrameType | None) -> None:
        if cancel.is_set():
            raise KeyboardInterrupt
        cancel.set()
        click.echo("swarm: stopping after the current step (Ctrl-C again to abort)", err=True)

    return handler
