"""A lead taking its team back: the running teammate adopted, the dead one started again, nothing lost."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable

import pytest

from swarm.backends.procs import is_pid_alive
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.core.teams import TeamStore
from swarm.runtime.team_resume import resume_team
from tests.backends.helpers import retry_until
from tests.teammate.conftest import lead_texts, wait_status

pytestmark = pytest.mark.usefixtures("served")  # teammates forked from the home's CLI server (tests.zygote)


def test_running_teammates_are_adopted_and_gone_ones_started_again(home: Home, team: str,
                                                                    start: Callable[..., Member]) -> None:
    live = start("live", "hello")
    gone = start("gone", "hello")
    wait_status(home, team, "live", "idle")
    wait_status(home, team, "gone", "idle")
    assert gone.pid is not None
    os.kill(gone.pid, signal.SIGKILL)
    retry_until(lambda: not is_pid_alive(gone.pid or 0), 10, what="gone to die")
    Mailbox(home, team).send("gone", "ping meanwhile", sender="team-lead")  # waits in the dead one's inbox

    resumed = resume_team(home, team, dict(os.environ))
    assert (resumed.adopted, resumed.restarted, resumed.failed) == (["live"], ["gone"], {})
    now = TeamStore(home).get(team)
    assert now.lead_pid == os.getpid()  # the teammates watch this process from now on
    assert (m := now.member("live")) is not None and m.pid == live.pid  # adopted: the same process
    assert (m := now.member("gone")) is not None and m.pid != gone.pid and m.is_active
    retry_until(lambda: "pong meanwhile from gone" in lead_texts(home, team), 20, what="the waiting message answered")
