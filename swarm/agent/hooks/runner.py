"""Run command hooks: each in its own process group, all of one event at once, each under its timeout.

A hook gets the event's JSON on stdin, runs through ``/bin/sh -c`` in the
agent's cwd with ``CLAUDE_PROJECT_DIR`` set, and its exit code, stdout and
stderr come back as a ``HookRun``. A hook never holds the agent up beyond its
timeout: one that runs over is stopped with its whole process tree
(``swarm.backends.procs.kill_tree``) and counts as a non-blocking error, like
one that cannot start.

With the agent's ``sandbox`` (``swarm.agent.sandbox``) the hook runs inside it,
exactly as the agent's Bash commands do (``Sandbox.enter``: the same writable
roots, hidden paths and network proxy): a project's hooks are code from the
repository, and the sandbox is what keeps such code in the worktree.
"""

from __future__ import annotations

import json
import logging
import subprocess
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarm.agent.hooks.config import Hook
from swarm.backends.procs import kill_tree

if TYPE_CHECKING:
    from swarm.agent.sandbox import Sandbox

log = logging.getLogger(__name__)

OUTPUT_LIMIT = 64_000
"""Characters of a hook's stdout or stderr kept (the rest is cut)."""
KILL_GRACE = 1.0
"""Seconds a timed-out hook gets after SIGTERM before SIGKILL."""


@dataclass(frozen=True)
class HookRun:
    """What one hook did."""

    hook: Hook
    code: int | None
    """Its exit code; None when it timed out or could not start."""
    stdout: str = ""
    stderr: str = ""
    failure: str = ""
    """Why it did not finish (``timed out after 5s``, ``cannot run: ...``); "" when it exited."""
    seconds: float = 0.0


def run_hooks(hooks: Sequence[Hook], payload: Mapping[str, Any], *, cwd: Path, env: Mapping[str, str],
              project_dir: Path, sandbox: Sandbox | None = None, roots: Sequence[Path] | None = None
              ) -> list[HookRun]:
    """Run ``hooks`` in parallel on ``payload``; results in the hooks' order. With ``sandbox``, each runs inside
    it as a Bash call in ``cwd`` by an agent with write roots ``roots`` would."""
    if not hooks:
        return []
    data = json.dumps(payload, default=str).encode()
    run_env = {**env, "CLAUDE_PROJECT_DIR": str(project_dir)}

    def one(hook: Hook) -> HookRun:
        if sandbox is None:
            return _run_one(hook, ["/bin/sh", "-c", hook.command], data, cwd, run_env)
        boxed = sandbox.enter("/bin/sh", hook.command, cwd, roots)
        try:
            return _run_one(hook, boxed.argv, data, cwd, run_env)
        finally:
            boxed.finished()

    if len(hooks) == 1:
        return [one(hooks[0])]
    with ThreadPoolExecutor(max_workers=min(len(hooks), 8), thread_name_prefix="hook") as pool:
        return list(pool.map(one, hooks))


def _run_one(hook: Hook, argv: list[str], data: bytes, cwd: Path, env: dict[str, str]) -> HookRun:
    started = time.monotonic()
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        return _failed(hook, f"cannot run: {exc.strerror or exc}", started)
    try:
        out, err = proc.communicate(data, timeout=hook.timeout)
    except subprocess.TimeoutExpired:
        kill_tree(proc.pid, KILL_GRACE)
        try:
            proc.communicate(timeout=KILL_GRACE)
        except (subprocess.TimeoutExpired, ValueError, OSError):
            pass
        return _failed(hook, f"timed out after {hook.timeout:g}s", started)
    except (BrokenPipeError, OSError) as exc:  # a hook that exits without reading stdin is fine
        if proc.poll() is None:
            kill_tree(proc.pid, KILL_GRACE)
        out, err = b"", str(exc).encode()
    return HookRun(hook, proc.wait(), _text(out), _text(err), seconds=time.monotonic() - started)


def _failed(hook: Hook, why: str, started: float) -> HookRun:
    log.warning("hook failed: %s", why, extra={"event": hook.event, "command": hook.command, "origin": hook.origin})
    return HookRun(hook, None, failure=why, seconds=time.monotonic() - started)


def _text(raw: bytes) -> str:
    text = raw.decode("utf-8", errors="replace")
    return text if len(text) <= OUTPUT_LIMIT else text[:OUTPUT_LIMIT] + "\n[hook output cut]"

