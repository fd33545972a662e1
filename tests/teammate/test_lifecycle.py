"""Spawn, talk, idle, shut down: real teammate processes on both backends."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from swarm.backends.procs import is_pid_alive
from swarm.core.frames import (
    IdleNotification,
    ShutdownApproved,
    TeammateTerminated,
    parse_frame,
)
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.core.teams import TeamStore
from swarm.errors import ConflictError
from swarm.runtime.shutdown import shutdown
from swarm.runtime.status import team_status
from tests.backends.helpers import retry_until
from tests.conftest import both_stores
from tests.teammate.conftest import teammate_pids, wait_status

BACKENDS = ["subprocess", "tmux"]


def _lead_frames(home: Home, team: str, kind: type) -> list:  # type: ignore[type-arg]
    frames = [parse_frame(e.text) for e in Mailbox(home, team).read("team-lead")]
    return [f for f in frames if isinstance(f, kind)]


def _lead_texts(home: Home, team: str) -> list[str]:
    return [e.text for e in Mailbox(home, team).read("team-lead") if isinstance(parse_frame(e.text), str)]


def _panes(socket: str) -> list[str]:
    out = subprocess.run(["tmux", "-L", socket, "list-panes", "-a", "-F", "#{pane_id}"],
                         capture_output=True, text=True, check=False)
    return out.stdout.split() if out.returncode == 0 else []


@both_stores
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.unserved  # one process per teammate
def test_three_teammates_answer_and_shut_down(backend: str, home: Home, team: str, tmux_socket: str,
                                             start: Callable[..., Member]) -> None:
    names = ["ann", "ben", "cat"]
    for name in names:
        member = start(name, f"ping first{name}", backend=backend)
        assert member.backend_type == backend and member.is_active
    retry_until(lambda: len(_lead_frames(home, team, IdleNotification)) >= 3, 20, what="3 idle notifications")
    mailbox = Mailbox(home, team)
    for name in names:
        mailbox.send(name, f"ping second{name}", sender="team-lead")
    expected = {f"pong {w}{n} from {n}" for n in names for w in ("first", "second")}
    retry_until(lambda: expected <= set(_lead_texts(home, team)), 20, what="6 pongs")
    retry_until(lambda: len(_lead_frames(home, team, IdleNotification)) >= 6, 20, what="6 idle notifications")
    idles = _lead_frames(home, team, IdleNotification)
    assert {i.sender for i in idles} == set(names)
    assert any(i.result == "answered ping secondann" and i.idle_reason == "available" for i in idles)
    if backend == "tmux":
        assert len(_panes(tmux_socket)) == 3
    assert len(teammate_pids(home)) == 3

    outcomes = shutdown(home, team, None, dict(os.environ), timeout=15)
    assert sorted((o.name, o.result) for o in outcomes) == [(n, "approved") for n in names]
    assert teammate_pids(home) == []
    assert _panes(tmux_socket) == []
    approved = _lead_frames(home, team, ShutdownApproved)
    assert {a.sender for a in approved} == set(names)
    if backend == "tmux":
        assert all(a.pane_id.startswith("%") and a.backend_type == "tmux" for a in approved)
    for member in TeamStore(home).get(team).members[1:]:
        assert member.is_active is False and member.status == "stopped"


@both_stores
@pytest.mark.parametrize("backend", BACKENDS)
def test_teammate_that_ignores_shutdown_is_killed(backend: str, home: Home, team: str, tmux_socket: str,
                                                  stubborn_playbook: Path, start: Callable[..., Member]) -> None:
    start("mule", "hello", backend=backend, book=stubborn_playbook, allowed_tools=["Bash"])
    retry_until(lambda: len(_lead_frames(home, team, IdleNotification)) == 1, 15, what="first turn done")
    outcomes = shutdown(home, team, ["mule"], dict(os.environ), timeout=1.5)
    assert [(o.name, o.result) for o in outcomes] == [("mule", "killed")]
    assert teammate_pids(home) == []
    assert _panes(tmux_socket) == []
    [notice] = _lead_frames(home, team, TeammateTerminated)
    assert "mule" in notice.message and "1.5s" in notice.message
    member = TeamStore(home).get(team).member("mule")
    assert member is not None and member.is_active is False


@both_stores
@pytest.mark.parametrize("backend", BACKENDS)
def test_kill_dash_nine_is_detected_and_reported_once(backend: str, home: Home, team: str,
                                                       start: Callable[..., Member]) -> None:
    member = start("doomed", "hello", backend=backend)
    wait_status(home, team, "doomed", "idle")
    assert member.pid is not None
    os.kill(member.pid, signal.SIGKILL)
    retry_until(lambda: not is_pid_alive(member.pid or 0), 10, what="process gone")
    states = {s.name: s.state for s in team_status(home, team)}
    assert states["doomed"] == "dead"
    team_status(home, team)  # a second look must not report it again
    notices = _lead_frames(home, team, TeammateTerminated)
    assert len(notices) == 1 and "doomed" in notices[0].message


def test_duplicate_live_name_is_refused(home: Home, team: str, start: Callable[..., Member]) -> None:
    start("solo", "hello")
    with pytest.raises(ConflictError, match="solo"):
        start("solo", "hello again")
    assert len(teammate_pids(home)) == 1


def test_recorded_message_is_not_run_twice_after_a_crash(home: Home, team: str, workdir: Path,
                                                         start: Callable[..., Member]) -> None:
    member = start("worker", "slow job alpha", allowed_tools=["Bash"])
    runs = workdir / "runs.txt"
    retry_until(lambda: runs.exists() and runs.read_text() == "alpha\n", 15, what="the job to start")
    inbox = home.inbox_path(team, "worker")
    transcript = home.transcript_path(team, "worker")
    [entry] = [r for r in map(json.loads, transcript.read_text().splitlines()) if r.get("delivered")]
    # the process dies mid-turn; put the entry back as if it died before pruning it
    assert member.pid is not None
    os.kill(member.pid, signal.SIGKILL)
    retry_until(lambda: not is_pid_alive(member.pid or 0), 10, what="worker gone")
    original = {"from": "team-lead", "text": "slow job alpha", "timestamp": "2026-11-30T00:00:00.000Z",
                "read": False, "type": "message", "msg_id": entry["delivered"][0]}
    inbox.write_text(json.dumps([original]))

    start("worker", "ping again", allowed_tools=["Bash"])
    retry_until(lambda: "pong again from worker" in _lead_texts(home, team), 20, what="respawned worker to answer")
    assert runs.read_text() == "alpha\n"  # the recorded job did not run a second time
    wait_status(home, team, "worker", "idle")  # the prune runs beside the turn; idle comes only after it
    assert Mailbox(home, team).read("worker") == []


def test_hostile_prompt_and_paths_arrive_byte_exact(home: Home, team: str, tmp_path: Path, tmux_socket: str,
                                                    start: Callable[..., Member]) -> None:
    odd = tmp_path / "w $(touch PWNED) ';\" `id`"
    odd.mkdir()
    prompt = "quote ' \" $(touch PWNED2) `touch PWNED3` ; rm -rf / \n second line \x1b[31m red \x07 bell \t tab"
    start("odd", prompt, backend="tmux", cwd=odd)
    retry_until(lambda: len(_lead_frames(home, team, IdleNotification)) == 1, 15, what="first turn done")
    transcript = home.transcript_path(team, "odd")
    users = [r["message"] for r in map(json.loads, transcript.read_text().splitlines())
             if r["kind"] == "message" and r["message"]["role"] == "user"]
    assert prompt in users[0]["content"][-1]["text"]  # after the context block
    member = TeamStore(home).get(team).member("odd")
    assert member is not None and member.cwd == str(odd)
    leftovers = [p.name for p in tmp_path.rglob("PWNED*")] + [p.name for p in Path.cwd().glob("PWNED*")]
    assert leftovers == []


def test_closed_pane_is_reported_once(home: Home, team: str, tmux_socket: str,
                                      start: Callable[..., Member]) -> None:
    member = start("paned", "hello", backend="tmux")
    retry_until(lambda: len(_lead_frames(home, team, IdleNotification)) == 1, 15, what="first turn done")
    subprocess.run(["tmux", "-L", tmux_socket, "kill-pane", "-t", member.tmux_pane_id], check=True)
    retry_until(lambda: not is_pid_alive(member.pid or 0), 10, what="the teammate to exit")
    retry_until(lambda: len(_lead_frames(home, team, TeammateTerminated)) == 1, 10, what="the lead to be told")
    states = {s.name: s.state for s in team_status(home, team)}
    assert states["paned"] == "dead"
    time.sleep(0.3)  # a late second report would show up now
    [notice] = _lead_frames(home, team, TeammateTerminated)
    assert "paned" in notice.message and "SIGHUP" in notice.message


def test_a_killed_teammate_takes_its_running_command_down(home: Home, team: str, workdir: Path,
                                                          start: Callable[..., Member]) -> None:
    member = start("busy", "slow job beta", allowed_tools=["Bash"])
    runs = workdir / "runs.txt"
    retry_until(lambda: runs.exists() and runs.read_text() == "beta\n", 15, what="the command to start")
    sleeper = [p for p in psutil.Process(member.pid).children(recursive=True) if "sleep" in " ".join(p.cmdline())]
    assert sleeper, "the Bash command's sleep should be running under the teammate"
    os.kill(member.pid or 0, signal.SIGTERM)  # e.g. its pane was closed, or someone killed it
    retry_until(lambda: not is_pid_alive(member.pid or 0), 10, what="the teammate to exit")
    retry_until(lambda: not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in sleeper), 10,
                what="its command to be stopped too")
