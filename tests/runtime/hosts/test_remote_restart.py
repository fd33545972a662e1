"""A restart policy for a teammate on a host: its host killed (-9), the supervising coordinator (``LeadPump``, as
`swarm up` runs it) marks it dead and places it again — a new epoch, on another host with the same labels — and
the old process, still running on the dead host, fences itself off."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable

import psutil

from swarm.core.teams import TeamStore
from swarm.runtime.hosts.place import place
from swarm.runtime.lead_pump import LeadPump
from tests.backends.helpers import retry_until
from tests.runtime.hosts.conftest import HostProc, Site
from tests.runtime.hosts.test_host_failure import FAST, _exited, _texts
from tests.teammate.conftest import PLAYBOOK


def test_on_failure_places_a_teammate_of_a_killed_host_again_on_another_host_with_its_labels(
        site: Site, start_host: Callable[..., HostProc]) -> None:
    first_host = start_host("h1", "--labels", "gpu", *FAST)
    book = site.tmp / "mate.toml"
    book.write_text(PLAYBOOK)
    first = place(site.lead, site.team, "ann", "ping one", host=None, labels=["gpu"], playbook=book,
                  restart="on-failure", max_restarts=2)
    assert first.host == "h1" and first.epoch == 1 and first.pid is not None
    old = psutil.Process(first.pid)
    retry_until(lambda: "pong one from ann" in _texts(site), 20, what="the first pong")
    second_host = start_host("h2", "--labels", "gpu", *FAST)
    pump = LeadPump(site.lead, site.team, env=dict(os.environ))
    try:
        os.kill(first_host.proc.pid, signal.SIGKILL)  # its teammate keeps running, orphaned, on the "dead" host

        def placed_again() -> bool:
            pump.pump(0.2)
            now = TeamStore(site.lead).get(site.team).member("ann")
            return now is not None and now.host == "h2" and now.epoch == 2 and now.present()

        retry_until(placed_again, 30, interval=0.1, what="ann placed again on h2")
        new_log = second_host.home.log_path(site.team, "ann")  # the new ann works on h2, from its prompt
        retry_until(lambda: new_log.is_file() and "pong one from ann" in new_log.read_text(), 20,
                    what="the new ann's pong")
        notices = [m.text for m in pump.messages] + _texts(site)
        assert any("was placed again on host h2 (restart 1 of 2, policy on-failure)" in t for t in notices)
        retry_until(lambda: _exited(old), 15, what="the old ann fenced itself off")
    finally:
        pump.close()
        with contextlib.suppress(psutil.NoSuchProcess):
            old.kill()


def test_without_a_policy_a_teammate_of_a_killed_host_stays_dead(
        site: Site, start_host: Callable[..., HostProc]) -> None:
    first_host = start_host("h1", "--labels", "gpu", *FAST)
    book = site.tmp / "mate.toml"
    book.write_text(PLAYBOOK)
    first = place(site.lead, site.team, "ann", "ping one", host=None, labels=["gpu"], playbook=book)
    assert first.pid is not None
    old = psutil.Process(first.pid)
    start_host("h2", "--labels", "gpu", *FAST)
    pump = LeadPump(site.lead, site.team, env=dict(os.environ))
    try:
        os.kill(first_host.proc.pid, signal.SIGKILL)

        def dead() -> bool:
            pump.pump(0.2)
            now = TeamStore(site.lead).get(site.team).member("ann")
            return now is not None and now.status == "dead"

        retry_until(dead, 15, interval=0.1, what="ann marked dead")
        for _ in range(15):  # past the first backoff (1 s): nothing places it again
            pump.pump(0.2)
        now = TeamStore(site.lead).get(site.team).member("ann")
        assert now is not None and now.status == "dead" and now.epoch == 1
    finally:
        pump.close()
        with contextlib.suppress(psutil.NoSuchProcess):
            old.kill()
