"""`swarm run`: a command started with ``run_in_background`` ends with its agent, children and all.

The background shell starts a child of its own (``sleep 300 &``) and waits on it;
stopping only the shell would leave that child running. Real processes: the
installed executable, the offline scripted model, real bash.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarm.backends.procs import is_pid_alive, kill_tree
from tests.forked import run_swarm

BACKGROUND = r"""
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "sleep 300 & echo $! > grandchild.pid; wait", run_in_background = true } }]
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "while [ ! -s grandchild.pid ]; do sleep 0.05; done" } }]
"""

PLAYBOOK = r"""
[[rules]]
match = 'parentwork'
[[rules.steps]]
tool_calls = [{ name = "Agent", input = { description = "child job", prompt = "childwork", subagent_type = "general-purpose" } }]
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "s=$(cut -d' ' -f3 /proc/$(cat grandchild.pid)/stat 2>/dev/null); if [ -z \"$s\" ] || [ \"$s\" = Z ]; then echo GONE > verdict; else echo ALIVE > verdict; fi" } }]
[[rules.steps]]
text = "parent done"

[[rules]]
match = 'childwork'
""" + BACKGROUND + r"""
[[rules.steps]]
text = "child done"

[[rules]]
match = 'mainwork'
""" + BACKGROUND + r"""
[[rules.steps]]
text = "main done"
"""


@pytest.fixture
def work(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "play.toml").write_text(PLAYBOOK)
    yield tmp_path
    pid_file = tmp_path / "grandchild.pid"
    # a failed test may leave the sleep running; stopping it must not hide that failure
    with contextlib.suppress(OSError, ValueError):
        kill_tree(int(pid_file.read_text()), 0.5)


def _run(cwd: Path, prompt: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    return run_swarm(["run", "-p", prompt, "--playbook", str(cwd / "play.toml")], cwd=cwd, env=env, timeout=60)


def test_a_subagents_background_command_dies_with_its_children_when_the_subagent_ends(work: Path) -> None:
    result = _run(work, "parentwork")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "parent done"
    # the parent's next command looked while the run was still going: the subagent's grandchild was gone
    assert (work / "verdict").read_text().strip() == "GONE"


def test_the_main_agents_background_command_dies_with_its_children_when_the_run_ends(work: Path) -> None:
    result = _run(work, "mainwork")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "main done"
    assert not is_pid_alive(int((work / "grandchild.pid").read_text()))
