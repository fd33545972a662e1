"""Running command hooks: in parallel, in the agent's cwd with CLAUDE_PROJECT_DIR, and a hook that runs over its
timeout is stopped with everything it started."""

from __future__ import annotations

import os
import time
from pathlib import Path

import psutil

from swarm.agent.hooks.config import Hook
from swarm.agent.hooks.runner import run_hooks
from tests.agent.hooks.hook_helpers import script
from tests.backends.helpers import retry_until


def _hook(command: str, timeout: float = 60) -> Hook:
    return Hook("PreToolUse", "", command, timeout, "project", "test")


def test_hooks_of_one_event_run_in_parallel_in_the_agents_cwd(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    slow = [script(tmp_path, f"slow{i}.sh", f"cat >/dev/null; sleep 1; pwd > where{i}; "
                                            f"echo \"$CLAUDE_PROJECT_DIR\" > project{i}\n") for i in range(3)]
    started = time.monotonic()
    runs = run_hooks([_hook(c) for c in slow], {"x": 1}, cwd=work, env=dict(os.environ), project_dir=tmp_path)
    assert time.monotonic() - started < 2.5  # three 1-second hooks, side by side
    assert [r.code for r in runs] == [0, 0, 0]
    assert all((work / f"where{i}").read_text().strip() == str(work) for i in range(3))
    assert (work / "project0").read_text().strip() == str(tmp_path)


def test_a_hook_over_its_timeout_is_stopped_with_what_it_started(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    hang = script(tmp_path, "hang.sh", f"sleep 300 &\necho $! > {pids}\nexec sleep 300\n")
    started = time.monotonic()
    [run] = run_hooks([_hook(hang, timeout=0.5)], {}, cwd=tmp_path, env=dict(os.environ), project_dir=tmp_path)
    assert run.code is None and run.failure == "timed out after 0.5s"
    assert time.monotonic() - started < 5
    child = int(pids.read_text())
    retry_until(lambda: not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE,
                5, what="the hook's background child to be gone")


def test_a_hook_that_cannot_start_or_ignores_stdin_is_no_crash(tmp_path: Path) -> None:
    runs = run_hooks([_hook("exit 0"), _hook("/no/such/hook")], {"big": "x" * 1_000_000}, cwd=tmp_path,
                     env=dict(os.environ), project_dir=tmp_path)
    assert runs[0].code == 0 and runs[1].code == 127
