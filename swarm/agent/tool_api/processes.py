"""The commands an agent's tools start, and how they are stopped: each with its whole tree, once, safely.

Bash starts its commands in their own session; a command left running in the
background belongs to the agent (``ToolContext.background``, its output in
``ToolContext.background_logs``) until whoever owns the agent stops it in its
``finally`` (``stop_background``), which also removes that output.
"""

from __future__ import annotations

import shutil
import subprocess
from contextlib import suppress

import psutil

from swarm.agent.tool_api.context import ToolContext
from swarm.backends.procs import kill_tree, process_create_time

KILL_GRACE_SECONDS = 2.0
"""Seconds a command's tree gets after SIGTERM before SIGKILL."""

Popen = subprocess.Popen[bytes]


def stop_command(proc: Popen, grace: float = KILL_GRACE_SECONDS, created: float | None = None) -> None:
    """Stop ``proc`` (a session leader), its group, its session and descendants; reap it.

    SIGTERM first, SIGKILL after ``grace`` seconds for whatever is left.
    ``created`` is the shell's create time read when it started; without it
    the time is read now if the shell was not reaped yet (its pid cannot have
    been reused). A reaped shell with no recorded time has only its remnants
    in the process group and session numbered after it stopped, and nothing
    at all when its pid already runs another process. Safe to call
    twice and on a process that has already exited.
    """
    if created is None:
        created = process_create_time(proc.pid)
        if created is not None and proc.returncode is not None:
            return  # reaped, and its pid already runs another process: nothing here is ours to signal
    kill_tree(proc.pid, grace, created)
    with suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace)


def stop_background(ctx: ToolContext) -> None:
    """Stop every command the agent started with ``run_in_background``, each with its whole tree, then remove
    the directory their output went to (``ToolContext.background_logs``): nobody is left to read it.

    Called once by whoever owns the agent's ``ctx`` when the agent is done
    (a subagent, a main session, a teammate); commands that already ended leave only
    their remnants to stop. Safe to call twice.
    """
    for proc in ctx.background:
        stop_command(proc)
    logs, ctx.background_logs = ctx.background_logs, None
    if logs is not None:
        shutil.rmtree(logs, ignore_errors=True)


def stop_children(ctx: ToolContext, grace: float) -> None:
    """For an agent that is its whole process (a teammate), at its end: every child of the process stops (a Bash
    command cut short, background jobs, what they left behind), each with its tree, then ``stop_background``."""
    for child in psutil.Process().children(recursive=False):
        kill_tree(child.pid, grace)
    stop_background(ctx)
