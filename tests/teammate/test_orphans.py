"""Nothing a teammate started outlives its team: real teammates, real signals, the installed ``swarm``.

Each teammate runs a Bash tool; the playbooks start processes that escape in
every way a shell allows (a background job in its own session, a daemon that
double-forks and calls ``setsid``, a foreground command), then the teammate is
SIGKILLed or refuses to stop, and the user stops the team through the CLI.
Processes are found by a unique ``argv[0]`` (``exec -a``), never by timing.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from swarm.agent.transcript import Transcript
from swarm.backends.procs import is_pid_alive, process_create_time
from swarm.core.home import Home
from swarm.core.protocol import Member
from swarm.core.teams import TeamStore
from swarm.teammate.delivery_worker import COMM as DELIVERY_COMM
from tests.backends.helpers import retry_until
from tests.cli.conftest import SWARM_EXE
from tests.forked import run_swarm
from tests.teammate.conftest import teammate_pids, wait_status

ESCAPER = r"""
[[rules]]
name = "escape"
match = 'escape (?P<tok>\w+)'
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "exec -a swarm-bg-{tok} sleep 300", run_in_background = true } }]
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "(setsid bash -c 'exec -a swarm-daemon-{tok} sleep 300' >/dev/null 2>&1 &); exec -a swarm-fg-{tok} sleep 300" } }]
"""

REFUSER = r"""
[[rules]]
name = "refuse"
match = '"type":\s*"shutdown_request".*"requestId":\s*"(?P<rid>[^"]+)"'
[[rules.steps]]
tool_calls = [{ name = "SendMessage", input = { to = "team-lead", message = { type = "shutdown_response", request_id = "{rid}", approve = false, reason = "busy" } } }]
[[rules.steps]]
text = "refused"
"""

KINDS = ("bg", "daemon", "fg")


def processes_named(prefix: str) -> list[psutil.Process]:
    """Live processes whose argv[0] starts with ``prefix`` (the unique names these tests give their commands)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmd = proc.info.get("cmdline") or []
        if cmd and cmd[0].startswith(prefix) and proc.info.get("status") != psutil.STATUS_ZOMBIE:
            found.append(proc)
    return found


@pytest.fixture
def tok() -> Iterator[str]:
    """A unique name for this test's processes; whatever still carries it at teardown is killed."""
    value = uuid.uuid4().hex[:10]
    yield value
    for kind in KINDS:
        for proc in processes_named(f"swarm-{kind}-{value}"):
            proc.kill()


@pytest.fixture
def escaper(tmp_path: Path) -> Path:
    path = tmp_path / "escaper.toml"
    path.write_text(ESCAPER)
    return path


def swarm(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_swarm(args, env=env, timeout=60)


def _escapees(tok: str) -> dict[str, list[psutil.Process]]:
    return {kind: processes_named(f"swarm-{kind}-{tok}") for kind in KINDS}


def _start_escaper(start: Callable[..., Member], tok: str, escaper: Path, backend: str = "subprocess") -> Member:
    member = start("t1", f"escape {tok}", backend=backend, book=escaper, allowed_tools=["Bash"])
    retry_until(lambda: all(_escapees(tok).values()), 20, what="the teammate's processes to start")
    return member


@pytest.mark.parametrize("stop", [("shutdown", "--all", "--team", "t", "--timeout", "2"),
                                  ("kill", "t1", "--team", "t"),
                                  ("team", "delete", "t", "--force", "--timeout", "2")],
                         ids=["shutdown-all", "kill", "team-delete-force"])
def test_a_sigkilled_teammates_processes_die_when_the_team_is_stopped(
        stop: tuple[str, ...], home: Home, team: str, tok: str, escaper: Path,
        start: Callable[..., Member]) -> None:
    _start_escaper(start, tok, escaper)
    [logs] = _background_logs(home)
    [pid] = teammate_pids(home)
    os.kill(pid, signal.SIGKILL)  # no chance to stop its children, or to remove its background output
    retry_until(lambda: not is_pid_alive(pid), 10, what="the teammate to die")
    assert all(_escapees(tok).values()), "its processes run on after the kill -9"
    assert logs.parent.is_dir()
    result = swarm(*stop)
    assert result.returncode == 0, result.stderr
    assert _escapees(tok) == {kind: [] for kind in KINDS}
    assert not logs.parent.exists()  # what it left in /tmp goes with what it left running


def test_the_coordinator_noticing_a_death_reaps_what_the_teammate_left(
        home: Home, team: str, tok: str, escaper: Path, start: Callable[..., Member]) -> None:
    from swarm.runtime.member_kinds import reap_dead

    _start_escaper(start, tok, escaper)
    [logs] = _background_logs(home)
    [pid] = teammate_pids(home)
    os.kill(pid, signal.SIGKILL)
    retry_until(lambda: not is_pid_alive(pid), 10, what="the teammate to die")
    assert reap_dead(home, team) == ["t1"]
    assert _escapees(tok) == {kind: [] for kind in KINDS}
    assert not logs.parent.exists()
    member = TeamStore(home).get(team).member("t1")
    assert member is not None and member.status == "dead"


def test_a_clean_shutdown_also_stops_background_jobs_and_daemons(
        home: Home, team: str, tok: str, escaper: Path, start: Callable[..., Member]) -> None:
    _start_escaper(start, tok, escaper)
    logs = _background_logs(home)
    assert len(logs) == 1 and logs[0].is_file()
    result = swarm("shutdown", "t1", "--team", "t", "--timeout", "2")
    assert result.returncode == 0, result.stderr
    assert _escapees(tok) == {kind: [] for kind in KINDS}
    assert teammate_pids(home) == []
    assert not logs[0].parent.exists()  # the background job's output went with it: nothing left in /tmp


def test_stop_signals_that_keep_coming_do_not_cut_the_teammates_end_short(
        home: Home, team: str, tok: str, escaper: Path, start: Callable[..., Member]) -> None:
    """A force stop's SIGTERM reaches a teammate more than once (its group, its session, its token's processes, a
    launcher's forward); one arriving during the end's clean-up used to abort it (seen in CI as the background
    output left in /tmp). Here they keep coming, every 10 ms, until the teammate is gone."""
    _start_escaper(start, tok, escaper)
    logs = _background_logs(home)
    member = TeamStore(home).get(team).member("t1")
    assert member is not None
    pid = member.worker_pid or member.pid
    assert pid is not None
    sent = 0
    deadline = time.monotonic() + 20
    while is_pid_alive(pid) and time.monotonic() < deadline:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
            sent += 1
        time.sleep(0.01)
    assert not is_pid_alive(pid)
    assert sent >= 2  # at least one came during the end
    left = Transcript(home.transcript_path(team, "t1")).events("left")
    assert [e["killed_by"] for e in left] == ["SIGTERM"]  # its end ran to the last line, once
    assert not logs[0].parent.exists()
    assert _escapees(tok)["bg"] == [] and _escapees(tok)["fg"] == []  # its own children; the daemon left its tree
    member = TeamStore(home).get(team).member("t1")
    assert member is not None and not member.is_active and member.status == "dead"


def _background_logs(home: Home) -> list[Path]:
    """The files teammate t1's background Bash commands write to, as its tool results told the model."""
    found = re.findall(r"goes to (/\S+?\.log);", home.transcript_path("t", "t1").read_text())
    return [Path(p) for p in dict.fromkeys(found)]


@pytest.mark.skipif(not Path("/usr/bin/tmux").exists() and not any(
    Path(d, "tmux").exists() for d in os.environ.get("PATH", "").split(os.pathsep)), reason="tmux not installed")
@pytest.mark.unserved  # the teammate is the one process its pid names
def test_kill_without_tmux_on_path_stops_the_teammate_by_pid_and_only_then_marks_it(
        home: Home, team: str, playbook: Path, start: Callable[..., Member]) -> None:
    start("t1", "hello", backend="tmux")
    wait_status(home, team, "t1", "idle")
    [pid] = teammate_pids(home)
    no_tmux = {**os.environ, "PATH": str(SWARM_EXE.parent)}  # the venv's bin: swarm, python, no tmux
    result = swarm("kill", "t1", "--team", "t", env=no_tmux)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "t1: killed"
    assert not is_pid_alive(pid)
    member = TeamStore(home).get(team).member("t1")
    assert member is not None and member.is_active is False and member.status == "killed"


def test_team_delete_force_kills_a_teammate_that_rejects_its_shutdown(
        home: Home, team: str, tmp_path: Path, start: Callable[..., Member]) -> None:
    refuser = tmp_path / "refuser.toml"
    refuser.write_text(REFUSER)
    start("mule", "hello", book=refuser)
    wait_status(home, team, "mule", "idle")
    refused = swarm("team", "delete", "t", "--timeout", "10")
    assert refused.returncode != 0 and "active members (mule)" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert TeamStore(home).exists(team) and len(teammate_pids(home)) == 1
    result = swarm("team", "delete", "t", "--force", "--timeout", "10")
    assert result.returncode == 0, result.stderr
    assert "stopped mule: killed" in result.stdout
    assert teammate_pids(home) == []
    assert not TeamStore(home).exists(team)


@pytest.fixture
def stranger() -> Iterator[subprocess.Popen[bytes]]:
    """A process that is not a teammate; no swarm command may signal it."""
    proc = subprocess.Popen(["sleep", "300"])
    yield proc
    proc.kill()
    proc.wait()


@pytest.mark.parametrize("stop", [("kill", "t1", "--team", "t"),
                                  ("shutdown", "--all", "--team", "t", "--timeout", "1"),
                                  ("team", "delete", "t", "--force", "--timeout", "1")],
                         ids=["kill", "shutdown-all", "team-delete-force"])
def test_a_reused_pid_is_never_signalled(stop: tuple[str, ...], home: Home, team: str,
                                         stranger: subprocess.Popen[bytes]) -> None:
    started = process_create_time(stranger.pid)
    assert started is not None
    TeamStore(home).add_member(team, Member(
        agent_id="t1@t", name="t1", backend_type="subprocess", tmux_pane_id="subprocess", is_active=True,
        status="idle", pid=stranger.pid, proc_start=started - 100.0,  # the teammate that had this pid is gone
    ))
    result = swarm(*stop)
    assert result.returncode == 0, result.stderr
    assert stranger.poll() is None, "swarm signalled a process that only reused a teammate's pid"


@pytest.mark.unserved  # a delivery worker of its own (a served teammate shares its server's)
def test_a_sigkilled_teammates_delivery_worker_ends_by_itself(home: Home, team: str,
                                                              start: Callable[..., Member]) -> None:
    """The worker's socket closes with the teammate, however it ends: it leaves, nobody has to stop it."""
    start("alice")
    wait_status(home, team, "alice", "idle")
    [pid] = teammate_pids(home)
    [worker] = [p for p in psutil.Process(pid).children() if p.name() == DELIVERY_COMM.decode()]
    os.kill(pid, signal.SIGKILL)

    def ended() -> bool:
        try:
            return worker.status() == psutil.STATUS_ZOMBIE  # ended, and not reaped yet by whoever adopted it
        except psutil.NoSuchProcess:
            return True

    retry_until(ended, 10, what="the delivery worker to end")
    assert teammate_pids(home) == []
