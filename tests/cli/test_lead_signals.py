"""Every way a lead process ends ends its team: SIGTERM, a closed pane (SIGHUP), ``kill -9``.

The installed ``swarm`` runs a scripted lead that creates a team, starts one
subprocess teammate, assigns it a task, and leaves two Bash children of its
own sleeping (one in the background, one in the foreground). Processes are
found by a unique ``argv[0]`` (``exec -a``) and the home's teammate processes,
and the signal is sent once the foreground child runs: never after a delay.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from swarm.backends.procs import kill_tree, sweep_dead_scratch
from swarm.backends.select import tmux_usable
from swarm.core.home import Home
from swarm.core.tasks import TaskStore
from swarm.core.teams import TeamStore
from tests.backends.helpers import retry_until
from tests.cli.conftest import SWARM_EXE
from tests.teammate.conftest import teammate_pids
from tests.teammate.test_orphans import processes_named

LEAD = r"""
[default]
text = "noted"

[[rules]]
name = "go"
match = 'go (?P<tok>\w+)'
[[rules.steps]]
tool_calls = [{ name = "TeamCreate", input = { team_name = "sig" } }]
[[rules.steps]]
tool_calls = [{ name = "TaskCreate", input = { subject = "wait for orders", description = "" } }]
[[rules.steps]]
tool_calls = [{ name = "Agent", input = { description = "w", name = "worker", team_name = "sig", prompt = "hello" } }]
[[rules.steps]]
tool_calls = [{ name = "TaskUpdate", input = { taskId = "1", owner = "worker", status = "in_progress" } }]
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "exec -a swarm-leadbg-{tok} sleep 300", run_in_background = true } }]
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "exec -a swarm-leadfg-{tok} sleep 300" } }]
[[rules.steps]]
text = "done"
"""

WORKER = r"""
[default]
text = "ready"
"""

LEFT_BEHIND = 30.0
"""Seconds a lead's end may take to reach every process (the handshake is quick: the teammate is idle)."""


@pytest.fixture
def tok(tmp_path: Path) -> Iterator[str]:
    """A unique name for this test's processes; whatever still carries it (or runs the home) is stopped after."""
    value = uuid.uuid4().hex[:10]
    yield value
    for proc in processes_named("swarm-lead"):
        if value in proc.info["cmdline"][0]:
            proc.kill()
    for pid in teammate_pids(Home(tmp_path / "home")):
        with contextlib.suppress(OSError):
            kill_tree(pid, 0.5)


def _files(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    lead, worker = tmp_path / "lead.toml", tmp_path / "worker.toml"
    lead.write_text(LEAD)
    worker.write_text(WORKER)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["SWARM_HOME"] = str(tmp_path / "home")
    return lead, worker, env


def _run_args(lead: Path, worker: Path) -> list[str]:
    return [str(SWARM_EXE), "run", "--playbook", str(lead), "--backend", "subprocess",
            "--teammate-playbook", f"worker={worker}"]


def _ready(home: Home, tok: str) -> bool:
    """The teammate has joined and the lead sits in its foreground Bash child."""
    if not TeamStore(home).exists("sig"):
        return False
    worker = TeamStore(home).get("sig").member("worker")
    return worker is not None and worker.present() and bool(processes_named(f"swarm-leadfg-{tok}"))


def _nothing_left(home: Home, tok: str) -> bool:
    return not teammate_pids(home) and not processes_named(f"swarm-leadbg-{tok}") and not processes_named(f"swarm-leadfg-{tok}")


def test_timeout_sigterm_of_a_headless_lead_shuts_its_team_down(tmp_path: Path, tok: str) -> None:
    lead, worker, env = _files(tmp_path)
    home = Home(tmp_path / "home")
    # `timeout` times out on SIGALRM: sending it one is the time running out, without guessing a duration
    proc = subprocess.Popen(["timeout", "-s", "TERM", "600", *_run_args(lead, worker), "-p", f"go {tok}"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        retry_until(lambda: _ready(home, tok) or proc.poll() is not None, 60, what="the team to be up")
        assert proc.poll() is None, proc.communicate()
        assert len(teammate_pids(home)) >= 1 and processes_named(f"swarm-leadbg-{tok}")
        proc.send_signal(signal.SIGALRM)
        out, err = proc.communicate(timeout=LEFT_BEHIND)
    finally:
        if proc.poll() is None:
            kill_tree(proc.pid, 0.5)
            proc.wait()
    assert proc.returncode == 124, err  # timeout's own status: it timed out
    assert "SIGTERM" in err and "teammates were shut down" in err, err
    assert _nothing_left(home, tok), (teammate_pids(home), err)
    member = TeamStore(home).get("sig").member("worker")
    assert member is not None and not member.present() and member.status == "stopped"
    assert (TaskStore(home, "sig").get("1").status, TaskStore(home, "sig").get("1").owner) == ("pending", None)


def test_a_lead_killed_with_sigkill_leaves_teammates_that_stop_on_their_own(tmp_path: Path, tok: str) -> None:
    lead, worker, env = _files(tmp_path)
    home = Home(tmp_path / "home")
    proc = subprocess.Popen([*_run_args(lead, worker), "-p", f"go {tok}"], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        retry_until(lambda: _ready(home, tok) or proc.poll() is not None, 60, what="the team to be up")
        assert proc.poll() is None, proc.communicate()
        team = TeamStore(home).get("sig")
        assert (team.lead_pid, team.lead_proc_start) == (proc.pid, psutil.Process(proc.pid).create_time())
        proc.kill()  # kill -9: no handler runs, nothing is shut down by the lead
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    left = set(Path(tempfile.gettempdir()).glob(f"swarm-bash-p{proc.pid}.*"))  # its background output's
    assert left, "the killed lead's scratch directory was expected (its background Bash)"
    assert left <= set(sweep_dead_scratch())  # what the next lead's first scratch directory does
    retry_until(lambda: not teammate_pids(home), 20, what="the teammate to notice its lead is gone and stop")
    member = TeamStore(home).get("sig").member("worker")
    assert member is not None and not member.present() and member.status == "stopped"  # left cleanly, not "dead"
    task = TaskStore(home, "sig").get("1")
    assert (task.status, task.owner) == ("pending", None)  # released for whoever leads next
    events = [json.loads(line) for line in home.transcript_path("sig", "worker").read_text().splitlines()]
    assert any(e.get("kind") == "event" and e.get("event") == "lead_gone" for e in events), events


@pytest.mark.skipif(not tmux_usable(os.environ) or shutil.which("tmux") is None, reason="tmux 3.2+ not available")
def test_closing_the_pane_of_an_interactive_lead_shuts_its_team_down(tmp_path: Path, tok: str) -> None:
    lead, worker, env = _files(tmp_path)
    home = Home(tmp_path / "home")
    socket = f"swarm-sig-{tok}"
    tmux = ["tmux", "-L", socket, "-f", "/dev/null"]
    env.pop("TMUX", None)
    command = " ".join([*_run_args(lead, worker), "--allow", "Bash"])  # its own calls are not asked here
    try:
        subprocess.run([*tmux, "new-session", "-d", "-x", "120", "-y", "40", "-c", str(tmp_path), command],
                       env=env, check=True, timeout=30)
        pid = int(subprocess.run([*tmux, "list-panes", "-F", "#{pane_pid}"], env=env, capture_output=True,
                                 text=True, check=True, timeout=30).stdout.split()[0])
        lead_proc = psutil.Process(pid)
        retry_until(lambda: "talk to the lead" in _screen(tmux, env), 60, what="the session's prompt")
        subprocess.run([*tmux, "send-keys", f"go {tok}", "Enter"], env=env, check=True, timeout=30)
        retry_until(lambda: _ready(home, tok), 60, what="the team to be up")
        subprocess.run([*tmux, "kill-pane"], env=env, check=True, timeout=30)  # the pane closed: SIGHUP
        retry_until(lambda: not lead_proc.is_running() or lead_proc.status() == psutil.STATUS_ZOMBIE,
                    LEFT_BEHIND, what="the lead to end")
        retry_until(lambda: _nothing_left(home, tok), 10, what="the lead's team and children to be stopped")
    finally:
        subprocess.run([*tmux, "kill-server"], env=env, capture_output=True, check=False, timeout=30)
    member = TeamStore(home).get("sig").member("worker")
    assert member is not None and not member.present() and member.status == "stopped"
    left = [json.loads(line) for line in home.transcript_path("sig", "worker").read_text().splitlines()]
    assert not any(e.get("event") == "lead_gone" for e in left)  # the lead shut it down; it did not have to notice


def _screen(tmux: list[str], env: dict[str, str]) -> str:
    return subprocess.run([*tmux, "capture-pane", "-p"], env=env, capture_output=True, text=True, check=False,
                          timeout=30).stdout
