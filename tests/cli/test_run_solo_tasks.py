"""The task tools of a solo ``swarm run``: a session-local task list, never a team's (issue 27)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarm.backends.procs import kill_tree
from swarm.core.home import Home
from swarm.core.tasks import TaskStore
from tests.forked import run_swarm
from tests.teammate.conftest import teammate_pids

SOLO = r"""
[[rules]]
match = 'plan it'
on = "prompt"
[[rules.steps]]
tool_calls = [{ name = "TaskCreate", input = { subject = "Write the parser", description = "d" } }]
[[rules.steps]]
tool_calls = [{ name = "TaskCreate", input = { subject = "Test the parser", description = "d" } }]
[[rules.steps]]
tool_calls = [{ name = "TaskUpdate", input = { taskId = "1", status = "completed" } }]
[[rules.steps]]
tool_calls = [{ name = "TaskList", input = {} }]
[[rules.steps]]
text = "all planned"
"""

LEAD = r"""
[default]
text = "noted"

[[rules]]
match = 'lead it'
on = "prompt"
[[rules.steps]]
tool_calls = [{ name = "TaskCreate", input = { subject = "solo chore", description = "mine alone" } }]
[[rules.steps]]
tool_calls = [{ name = "TeamCreate", input = { team_name = "crew" } }]
[[rules.steps]]
tool_calls = [{ name = "TaskCreate", input = { subject = "team job", description = "for the crew" } }]
[[rules.steps]]
tool_calls = [{ name = "Agent", input = { description = "w", name = "worker", team_name = "crew", prompt = "hello" } }]
[[rules.steps]]
text = "waiting for the worker"
"""

WORKER = r"""
[default]
text = "ready"

[[rules]]
match = 'hello'
on = "prompt"
once = true
[[rules.steps]]
tool_calls = [{ name = "TaskList", input = {} }]
[[rules.steps]]
tool_calls = [{ name = "TaskUpdate", input = { taskId = "1", status = "in_progress", owner = "worker" } }]
[[rules.steps]]
tool_calls = [{ name = "TaskUpdate", input = { taskId = "1", status = "completed" } }]
[[rules.steps]]
text = "finished"
"""


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Home]:
    """The run's home; whatever a failed run left running under it is stopped at teardown."""
    home = Home(tmp_path / "home")
    yield home
    for pid in teammate_pids(home):
        with contextlib.suppress(OSError):
            kill_tree(pid, 1.0)


def _run(home: Home, cwd: Path, playbook: str, prompt: str, *args: str) -> subprocess.CompletedProcess[str]:
    book = cwd / "play.toml"
    book.write_text(playbook)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["SWARM_HOME"] = str(home.root)
    return run_swarm(["run", "-p", prompt, "--playbook", str(book), "--json", "--backend", "subprocess", *args],
                     cwd=cwd, env=env, timeout=120)


def _session_lists(home: Home) -> list[str]:
    return sorted(p.name for p in home.tasks_root.iterdir() if p.name.startswith("session-"))


def test_a_solo_run_keeps_its_tasks_in_a_list_of_its_own_session(home: Home, tmp_path: Path) -> None:
    done = _run(home, tmp_path, SOLO, "plan it")
    assert done.returncode == 0, done.stderr
    assert "no team" not in done.stdout + done.stderr
    out = json.loads(done.stdout)
    assert out["text"] == "all planned" and out["reason"] == "no_team"
    assert [(t["id"], t["subject"], t["status"]) for t in out["tasks"]] == [
        ("1", "Write the parser", "completed"), ("2", "Test the parser", "pending")]
    [listed] = _session_lists(home)
    assert [t.subject for t in TaskStore(home, listed).list()] == ["Write the parser", "Test the parser"]
    again = _run(home, tmp_path, SOLO, "plan it")  # another run: another session, another list
    assert again.returncode == 0, again.stderr
    assert len(_session_lists(home)) == 2


def test_a_lead_s_solo_list_stays_its_own_once_it_leads_a_team(home: Home, tmp_path: Path) -> None:
    worker = tmp_path / "worker.toml"
    worker.write_text(WORKER)
    done = _run(home, tmp_path, LEAD, "lead it", "--teammate-playbook", f"worker={worker}")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert [t["subject"] for t in out["tasks"]] == ["solo chore"]
    [listed] = _session_lists(home)
    assert [t.subject for t in TaskStore(home, listed).list()] == ["solo chore"]
    team = TaskStore(home, "crew").list()
    assert [(t.subject, t.status, t.owner) for t in team] == [("team job", "completed", "worker")]
    seen = home.transcript_path("crew", "worker").read_text()
    assert "#1 [pending] team job" in seen and "solo chore" not in seen
