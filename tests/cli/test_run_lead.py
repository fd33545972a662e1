"""`swarm run` as a headless team lead, through the installed executable, offline."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from swarm.core.home import Home
from swarm.core.tasks import TaskStore
from swarm.core.teams import TeamStore
from swarm.runtime.demo import DEMO_PROMPT
from swarm.runtime.sample import examples_dir, make_sample_repo
from tests.cli.conftest import SWARM_EXE
from tests.teammates.conftest import teammate_pids


def test_a_headless_lead_run_leaves_a_finished_task_list_and_no_processes(tmp_path: Path) -> None:
    repo = make_sample_repo(tmp_path / "repo")
    home = Home(tmp_path / "home")
    lead = examples_dir() / "lead"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["SWARM_HOME"] = str(home.root)
    done = subprocess.run(
        [str(SWARM_EXE), "run", "-p", DEMO_PROMPT, "--playbook", str(lead / "lead.toml"), "--backend", "subprocess",
         "--teammate-playbook", f"implementer={lead / 'implementer.toml'}",
         "--teammate-playbook", f"tester={lead / 'tester.toml'}",
         "--allow", "Bash(git add:*)", "--allow", "Bash(git commit:*)", "--allow", "Bash(git merge:*)",
         "--allow", "Bash(python3:*)", "--json"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["text"].startswith("Done: slugify()") and out["reason"] == "done"
    report = out["report"]
    on_disk = {t.id: (t.status, t.owner) for t in TaskStore(home, "feature").list()}
    assert on_disk == {"1": ("completed", "implementer"), "2": ("completed", "tester")}
    assert {t["id"]: (t["status"], t["owner"]) for t in report["tasks"]} == on_disk
    assert {m["name"]: m["stopped"] for m in report["members"]} == {"implementer": "stopped", "tester": "stopped"}
    assert teammate_pids(home) == []
    assert not any(m.is_active for m in TeamStore(home).get("feature").members if m.name != "team-lead")


def test_a_bad_teammate_playbook_option_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run([str(SWARM_EXE), "run", "-p", "x", "--teammate-playbook", "alice"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "NAME=PLAYBOOK" in done.stderr and done.stderr.count("\n") == 1
