"""A host that stops heartbeating: its teammates are marked dead after the host's --dead-after, the lead is told
once, their tasks go back to the list; a teammate declared dead that comes back (SIGCONT) stops itself before
doing anything else (fencing)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

import psutil

from swarm.core.frames import TeammateTerminated, parse_frame
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.core.tasks import TaskStore
from swarm.core.teams import TeamStore
from swarm.runtime.hosts.place import place
from swarm.runtime.spawn import wait_joined
from swarm.runtime.status import team_status
from tests.backends.helpers import retry_until
from tests.runtime.hosts.conftest import HostProc, Site
from tests.teammate.conftest import PLAYBOOK

FAST = ("--heartbeat", "0.2", "--dead-after", "1.5")


def _placed(site: Site, start_host: Callable[..., HostProc], name: str) -> tuple[HostProc, Member, psutil.Process]:
    host = start_host("h1", *FAST)
    book = site.tmp / "book.toml"
    book.write_text(PLAYBOOK)
    member = place(site.lead, site.team, name, "ping first", host="h1", labels=[], playbook=book)
    wait_joined(site.lead, site.team, [name])
    retry_until(lambda: f"pong first from {name}" in _texts(site), 20, what="the first pong")
    retry_until(lambda: _state(site, name) == "idle", 10, what=f"{name} idle")
    task = TaskStore(site.lead, site.team).create("build it")
    TaskStore(site.lead, site.team).claim(task.id, name)
    assert member.pid is not None
    return host, member, psutil.Process(member.pid)


def _texts(site: Site) -> list[str]:
    return [e.text for e in Mailbox(site.lead, site.team).read("team-lead")]


def _state(site: Site, name: str) -> str:
    return {r.name: r.state for r in team_status(site.lead, site.team)}[name]


def _exited(proc: psutil.Process) -> bool:
    try:
        return proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _notices(site: Site, name: str) -> list[TeammateTerminated]:
    frames = [parse_frame(t) for t in _texts(site)]
    return [f for f in frames if isinstance(f, TeammateTerminated) and name in f.message]


def test_a_killed_host_has_its_teammates_marked_dead_once_and_their_tasks_released(
        site: Site, start_host: Callable[..., HostProc]) -> None:
    host, member, teammate = _placed(site, start_host, "ann")
    assert _state(site, "ann") == "idle"  # heartbeats arrive: alive
    os.kill(host.proc.pid, signal.SIGKILL)
    teammate.kill()
    started = time.monotonic()
    retry_until(lambda: _state(site, "ann") == "dead", 10, interval=0.1, what="ann marked dead")
    assert time.monotonic() - started < 6  # bounded by --dead-after 1.5 (and a status call's period)
    team_status(site.lead, site.team)  # a second look reports nothing again
    [notice] = _notices(site, "ann")
    assert "host h1 stopped heartbeating" in notice.message
    [task] = TaskStore(site.lead, site.team).list()
    assert task.owner is None and task.status == "pending"
    [listed] = site.rows.hosts()
    assert listed.lost


def test_a_teammate_declared_dead_that_comes_back_stops_itself_before_doing_anything(
        site: Site, start_host: Callable[..., HostProc]) -> None:
    host, member, teammate = _placed(site, start_host, "ann")
    log_before = host.home.log_path(site.team, "ann").read_text()
    paused = [host.proc.pid, teammate.pid]
    for pid in paused:
        os.kill(pid, signal.SIGSTOP)  # the whole host frozen: a partition, as the others see it
    try:
        retry_until(lambda: _state(site, "ann") == "dead", 10, interval=0.1, what="ann marked dead")
        Mailbox(site.lead, site.team).send("ann", "ping after", sender="team-lead")  # work it must never do
        # the teammate comes back first (its host still frozen): only its own fence can stop it
        os.kill(teammate.pid, signal.SIGCONT)
        retry_until(lambda: _exited(teammate), 10, what="the fenced teammate's exit")  # a zombie: its host is frozen
    finally:
        for pid in paused:
            os.kill(pid, signal.SIGCONT)
    time.sleep(1.0)  # time enough for a pong, had it gone on
    assert "pong after from ann" not in _texts(site)
    assert "fenced: it was declared dead" in host.home.log_path(site.team, "ann").read_text()
    assert "fenced" not in log_before
    ann = TeamStore(site.lead).get(site.team).member("ann")
    assert ann is not None and ann.status == "dead" and ann.is_active is False  # it wrote nothing on its way out
    assert len(_notices(site, "ann")) == 1
    [task] = TaskStore(site.lead, site.team).list()
    assert task.owner is None
    retry_until(lambda: not site.rows.hosts()[0].lost, 5, what="the host heartbeats again")
    retry_until(lambda: site.rows.hosts()[0].running == 0, 5, what="the host records the end")
