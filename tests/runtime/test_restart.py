"""Restart policies with real teammate processes: kill -9, restart with backoff, keep the task, tell the lead."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

import pytest

from swarm.agent.transcript import Transcript
from swarm.backends.procs import is_pid_alive
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.members import request_shutdown
from swarm.core.protocol import Member
from swarm.core.tasks import TaskStore
from swarm.core.teams import TeamStore
from swarm.runtime.lead_pump import LeadPump
from swarm.runtime.shutdown import force_stop
from swarm.runtime.up import stop_team
from tests.backends.helpers import retry_until
from tests.teammate.conftest import wait_status

pytestmark = pytest.mark.usefixtures("served")  # teammates forked from the home's CLI server (tests.zygote)


def _member(home: Home, team: str, name: str) -> Member:
    member = TeamStore(home).get(team).member(name)
    assert member is not None
    return member


def _texts(pump: LeadPump) -> list[str]:
    return [m.text for m in pump.messages]


def _kill(member: Member) -> None:
    assert member.pid is not None
    os.kill(member.worker_pid or member.pid, signal.SIGKILL)
    retry_until(lambda: not is_pid_alive(member.worker_pid or member.pid or 0), 10, what="the teammate gone")


def test_killed_three_times_under_on_failure_with_two_restarts(home: Home, team: str,
                                                               start: Callable[..., Member]) -> None:
    start("w", "hello", restart="on-failure", max_restarts=2)
    wait_status(home, team, "w", "idle")
    tasks = TaskStore(home, team)
    task = tasks.create("fix the parser")
    tasks.claim(task.id, "w")
    pump = LeadPump(home, team, env=dict(os.environ))
    try:
        for restart in (1, 2):
            before = _member(home, team, "w")
            _kill(before)
            began = time.monotonic()

            def back(before: Member = before) -> bool:
                pump.pump(0.1)
                now = _member(home, team, "w")
                return now.joined_at != before.joined_at and now.status == "idle" and bool(now.is_active)

            retry_until(back, 30, what=f"restart {restart}")
            assert time.monotonic() - began >= 2.0 ** (restart - 1) * 0.9  # the backoff: 1 s, then 2 s
            assert tasks.get(task.id).owner == "w" and tasks.get(task.id).status == "in_progress"
        Mailbox(home, team).send("w", "ping after", sender="team-lead")
        retry_until(lambda: (pump.pump(0.1), "pong after from w" in _texts(pump))[1], 20,
                    what="the restarted teammate to answer")

        _kill(_member(home, team, "w"))
        retry_until(lambda: (pump.pump(0.1), any("is not restarted" in t for t in _texts(pump)))[1], 30,
                    what="the lead told it gave up")
        for _ in range(20):  # well past the next backoff (4 s): it stays down, and the lead is told only once
            pump.pump(0.25)
    finally:
        pump.close()
    texts = _texts(pump)
    assert sum("was started again" in t for t in texts) == 2
    assert sum("is not restarted" in t for t in texts) == 1
    assert "restart 1 of 2" in "".join(texts) and "it keeps task 1" in "".join(texts)
    final = _member(home, team, "w")
    assert final.status == "dead" and not final.is_active
    assert len(Transcript(home.transcript_path(team, "w")).events("joined")) == 3  # one transcript, three lives
    prompts = [r for r in Transcript(home.transcript_path(team, "w")).records() if r.get("kind") == "message"
               and r["message"]["role"] == "user" and 'summary="initial task"' in str(r["message"])]
    assert len(prompts) == 1  # no restart gave it its first task again: it went on from its transcript


def test_no_policy_no_restart_and_a_forced_stop_is_not_a_failure(home: Home, team: str,
                                                                  start: Callable[..., Member]) -> None:
    start("plain", "hello")
    start("kept", "hello", restart="on-failure", max_restarts=5)
    wait_status(home, team, "plain", "idle")
    wait_status(home, team, "kept", "idle")
    force_stop(home, team, _member(home, team, "kept"), dict(os.environ), why="killed by `swarm kill`")
    _kill(_member(home, team, "plain"))
    pump = LeadPump(home, team, env=dict(os.environ))
    try:
        for _ in range(12):
            pump.pump(0.25)
    finally:
        pump.close()
    assert _member(home, team, "plain").status == "dead" and _member(home, team, "kept").status == "killed"
    assert not any("started again" in t for t in _texts(pump))


def test_always_restarts_after_a_shutdown_but_never_while_the_team_goes_down(home: Home, team: str,
                                                                              start: Callable[..., Member]) -> None:
    start("a", "hello", restart="always", max_restarts=3)
    wait_status(home, team, "a", "idle")
    pump = LeadPump(home, team, env=dict(os.environ))
    try:
        first = _member(home, team, "a")
        request_shutdown(home, team, "a", "done for now")  # the lead model asked it to stop; it approves

        def back() -> bool:
            pump.pump(0.1)
            now = _member(home, team, "a")
            return now.joined_at != first.joined_at and now.status == "idle" and bool(now.is_active)

        retry_until(back, 30, what="the always teammate to come back")
        stop_team(home, team, dict(os.environ), timeout=10.0, inbox=pump.inbox)
        for _ in range(12):  # past the backoff (2 s)
            pump.pump(0.25)
    finally:
        pump.close()
    assert _member(home, team, "a").status == "stopped"
    assert sum("was started again" in t for t in _texts(pump)) == 1
