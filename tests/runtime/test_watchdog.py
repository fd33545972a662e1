"""The watchdog with real teammates: one stuck in a tool call is nudged, then reported; one that answers is not."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.core.tasks import TaskStore
from swarm.runtime.lead_pump import LeadPump
from tests.backends.helpers import retry_until
from tests.teammate.conftest import wait_status

BOOK = r"""
[[rules]]
name = "work"
match = 'work on (?P<tok>\w+)'
tool_calls = [{ name = "Bash", input = { command = "echo started > {tok}.txt; sleep 40" } }]

[[rules]]
name = "nudged"
match = 'task #(?P<id>\d+) .*no activity'
[[rules.steps]]
tool_calls = [{ name = "TaskUpdate", input = { taskId = "{id}", status = "completed" } }]
[[rules.steps]]
text = "finished it"
"""


def test_a_stalled_teammate_is_nudged_once_then_reported_once(home: Home, team: str, workdir: Path,
                                                              start: Callable[..., Member], tmp_path: Path) -> None:
    book = tmp_path / "watch.toml"
    book.write_text(BOOK)
    tasks = TaskStore(home, team)
    stuck_task, quiet_task = tasks.create("parse the logs"), tasks.create("write the summary")
    start("quiet", "hello", book=book)
    wait_status(home, team, "quiet", "idle")
    tasks.claim(quiet_task.id, "quiet")  # holds a task, waits for nothing: idle
    start("stuck", "work on logs", book=book, allowed_tools=["Bash"])
    tasks.claim(stuck_task.id, "stuck")
    retry_until(lambda: (workdir / "logs.txt").exists(), 15, what="the stuck teammate's command to start")

    pump = LeadPump(home, team, stall_after=1.5)
    began = time.monotonic()
    try:
        def reported() -> bool:
            pump.pump(0.1)
            return any("even after a nudge" in m.text for m in pump.messages)

        retry_until(reported, 20, what="the lead told of the stuck teammate")
        assert time.monotonic() - began >= 1.5 - 0.1  # the report comes stall_after after the nudge, at the earliest
        for _ in range(16):  # four more stall periods: nobody is nudged or reported again
            pump.pump(0.25)
    finally:
        pump.close()
    reports = [m.text for m in pump.messages if "even after a nudge" in m.text]
    assert len(reports) == 1 and reports[0].startswith("stuck holds task #1")
    assert tasks.get(quiet_task.id).status == "completed"  # the nudge reached the idle one: it went on
    waiting = [e.text for e in Mailbox(home, team).pending("stuck")]
    assert len(waiting) == 1 and "task #1" in waiting[0]  # one nudge, waiting behind the stuck call
