"""`swarm run` as a headless team lead, through the installed executable, offline."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarm.backends.procs import kill_tree
from swarm.core.home import Home
from swarm.core.tasks import TaskStore
from swarm.core.teams import TeamStore
from swarm.runtime.demo import DEMO_PROMPT
from swarm.runtime.sample_repo import examples_dir, make_sample_repo
from tests.cli.conftest import SWARM_EXE
from tests.fakes import FakeAnthropicServer, text_reply, tool_use_reply
from tests.forked import run_swarm
from tests.runtime.up.helpers import processes_with
from tests.teammate.conftest import teammate_pids

pytestmark = pytest.mark.usefixtures("served")  # teammates forked from the home's CLI server (tests.zygote)

LEAD = "Create a team that you lead"
NAP = "27.913"  # an unusual duration: the teammate's sleep is found by it


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Home]:
    """The run's home; whatever a failed run left running under it is stopped at teardown."""
    home = Home(tmp_path / "home")
    yield home
    for pid in [*teammate_pids(home), *processes_with(f"sleep {NAP}")]:
        with contextlib.suppress(OSError):  # gone meanwhile: nothing to stop
            kill_tree(pid, 1.0)


def _lead_env(home: Home, api: FakeAnthropicServer) -> dict[str, str]:
    return {**os.environ, "ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": api.base_url, "SWARM_HOME": str(home.root)}


def _run_lead(home: Home, api: FakeAnthropicServer, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_swarm(["run", "--backend", "subprocess", *args], cwd=cwd, env=_lead_env(home, api), timeout=120)


def test_a_headless_lead_run_leaves_a_finished_task_list_and_no_processes(tmp_path: Path) -> None:
    repo = make_sample_repo(tmp_path / "repo")
    home = Home(tmp_path / "home")
    lead = examples_dir() / "lead"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["SWARM_HOME"] = str(home.root)
    done = run_swarm(["run", "-p", DEMO_PROMPT, "--playbook", str(lead / "lead.toml"), "--backend", "subprocess",
                      "--teammate-playbook", f"implementer={lead / 'implementer.toml'}",
                      "--teammate-playbook", f"tester={lead / 'tester.toml'}",
                      "--allow", "Bash(git add:*)", "--allow", "Bash(git commit:*)", "--allow", "Bash(git merge:*)",
                      "--allow", "Bash(python3:*)", "--json"], cwd=repo, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["text"].startswith("Done: slugify()") and out["reason"] == "done"
    report = out["report"]
    assert report["ok"] is True  # a run that ended well says so
    on_disk = {t.id: (t.status, t.owner) for t in TaskStore(home, "feature").list()}
    assert on_disk == {"1": ("completed", "implementer"), "2": ("completed", "tester")}
    assert {t["id"]: (t["status"], t["owner"]) for t in report["tasks"]} == on_disk
    assert {m["name"]: m["stopped"] for m in report["members"]} == {"implementer": "stopped", "tester": "stopped"}
    assert teammate_pids(home) == []
    assert not any(m.is_active for m in TeamStore(home).get("feature").members if m.name != "team-lead")


def test_a_bad_teammate_playbook_option_is_a_usage_error(tmp_path: Path) -> None:
    done = run_swarm(["run", "-p", "x", "--teammate-playbook", "alice"], cwd=tmp_path, timeout=60)
    assert done.returncode == 2 and "NAME=PLAYBOOK" in done.stderr and done.stderr.count("\n") == 1


def test_a_run_out_of_time_exits_1_with_its_teammates_stopped_and_their_tasks_pending(
        home: Home, api: FakeAnthropicServer, tmp_path: Path) -> None:
    api.enqueue(tool_use_reply("TeamCreate", {"team_name": "slow"}),
                tool_use_reply("TaskCreate", {"subject": "take a nap", "description": ""}),
                tool_use_reply("Agent", {"description": "s", "prompt": "SLOW JOB", "team_name": "slow",
                                         "name": "sleepy"}),
                tool_use_reply("TaskUpdate", {"taskId": "1", "owner": "sleepy", "status": "in_progress"}),
                text_reply("waiting"), when=LEAD)
    api.enqueue(text_reply("still waiting"), when=LEAD, repeat=True)
    api.enqueue(tool_use_reply("Bash", {"command": f"sleep {NAP}"}), when="SLOW JOB")
    api.enqueue(text_reply("ok"), when="SLOW JOB", repeat=True)

    run = subprocess.Popen([str(SWARM_EXE), "run", "--backend", "subprocess", "-p", "nap", "--timeout", "20",
                            "--allow", "Bash(sleep:*)", "--json"], cwd=tmp_path, env=_lead_env(home, api), text=True,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    napping: list[int] = []
    try:
        # the teammate's Bash is running when the time runs out; the 20 s leave room for a loaded machine to spawn
        # it (12 s were once not enough on a CI runner with four workers on two cores)
        while not napping and run.poll() is None:
            napping = processes_with(f"sleep {NAP}")
            time.sleep(0.05)
        stdout, stderr = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            kill_tree(run.pid, 1.0)
    done = subprocess.CompletedProcess(run.args, run.returncode, stdout, stderr)

    assert napping, f"the teammate never started its sleep before the run ended: {stderr}"
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines()[-1] == ("swarm: error: run ended by timeout; teammates were shut down "
                                            "(team 'slow' is kept: `swarm status --team slow`)")
    report = json.loads(done.stdout)["report"]
    assert (report["ok"], report["reason"]) == (False, "timeout")
    lead = json.dumps([r.body["messages"] for r in api.requests if LEAD in json.dumps(r.body)])
    assert "Updated task #1: take a nap [in_progress] owner: sleepy" in lead  # sleepy held it when time ran out
    task = TaskStore(home, "slow").get("1")
    assert (task.status, task.owner) == ("pending", None)  # back on the list for someone else
    assert report["tasks"] == [task.wire()]
    assert teammate_pids(home) == [] and processes_with(f"sleep {NAP}") == []
    assert not any(m.present() for m in TeamStore(home).get("slow").members if m.name != "team-lead")


def test_rm_removes_the_team_and_its_task_list(home: Home, api: FakeAnthropicServer, tmp_path: Path) -> None:
    api.enqueue(tool_use_reply("TeamCreate", {"team_name": "brief"}),
                tool_use_reply("TaskCreate", {"subject": "nothing much", "description": ""}),
                text_reply("all done"), when=LEAD)

    done = _run_lead(home, api, tmp_path, "-p", "a short one", "--rm", "--json")

    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert (out["text"], out["reason"], out["report"]["ok"]) == ("all done", "done", True)
    assert [t["subject"] for t in out["report"]["tasks"]] == ["nothing much"]  # reported before it went
    assert not TeamStore(home).exists("brief")
    assert not home.tasks_dir("brief").exists() and not home.team_dir("brief").exists()
