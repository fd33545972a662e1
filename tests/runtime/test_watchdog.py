"""The watchdog with real teammates: one stuck in a tool call is nudged, then reported (the lead's Notification hooks
hear it); one that answers is not; a call past its own timeout is interrupted as a Ctrl-C in its pane would."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from swarm.agent.hooks.permission_hooks import stalled_hooks
from swarm.agent.tool_api.context import AgentIdentity, AgentServices, ToolContext
from swarm.core.frames import IdleNotification, entry_frame
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.core.tasks import TaskStore
from swarm.core.teams import TeamStore
from swarm.runtime.lead_pump import LeadPump
from swarm.runtime.watchdog import Watchdog
from tests.agent.hooks.hook_helpers import agent_hooks, hook_settings, script
from tests.backends.helpers import retry_until
from tests.teammate.conftest import wait_status

pytestmark = pytest.mark.usefixtures("served")  # teammates forked from the home's CLI server (tests.zygote)

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

    told = tmp_path / "told.jsonl"  # the lead's Notification hook, for stalled teammates only
    hooks = agent_hooks(workdir, hook_settings(Notification=[("teammate_stalled", script(
        tmp_path, "notify.sh", f"cat >> {told}; echo >> {told}\n"), None)]))
    lead_ctx = ToolContext(AgentIdentity(cwd=workdir), services=AgentServices(hooks=hooks))
    pump = LeadPump(home, team, stall_after=1.5, on_stalled=lambda name, text: stalled_hooks(lead_ctx, text))
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
    [notice] = [json.loads(line) for line in told.read_text().splitlines() if line.strip()]  # once, with the report
    assert notice["hook_event_name"] == "Notification" and notice["notification_type"] == "teammate_stalled"
    assert notice["message"] == reports[0]
    assert tasks.get(quiet_task.id).status == "completed"  # the nudge reached the idle one: it went on
    waiting = [e.text for e in Mailbox(home, team).pending("stuck")]
    assert len(waiting) == 1 and "task #1" in waiting[0]  # one nudge, waiting behind the stuck call


def _idle_reasons(home: Home, team: str, name: str) -> list[str]:
    frames = [entry_frame(e) for e in Mailbox(home, team).read("team-lead")]
    return [f.idle_reason for f in frames if isinstance(f, IdleNotification) and f.sender == name]


OVERTIME = r"""
[[rules]]
name = "short"
match = 'work late'
tool_calls = [{ name = "Bash", input = { command = "echo started > late.txt; sleep 40", timeout = 100000 } }]

[[rules]]
name = "long"
match = 'work early'
tool_calls = [{ name = "Bash", input = { command = "echo started > early.txt; sleep 40", timeout = 600000 } }]
"""


def test_a_call_past_its_own_timeout_is_interrupted_once_as_ctrl_c_would_and_one_within_it_is_not(
        home: Home, team: str, workdir: Path, start: Callable[..., Member], tmp_path: Path) -> None:
    book = tmp_path / "overtime.toml"
    book.write_text(OVERTIME)
    late = start("late", "work late", book=book, allowed_tools=["Bash"])  # a 100 s limit
    start("early", "work early", book=book, allowed_tools=["Bash"])  # a 600 s limit
    retry_until(lambda: (workdir / "late.txt").exists() and (workdir / "early.txt").exists(), 15,
                what="both commands to start")
    # 200 s on, as the watchdog sees it: late's call is past 100 s + the grace (its tool did not end it: it is a
    # real 40 s sleep here, so only the watchdog's interrupt can end it now); early's is within its 600 s
    watchdog = Watchdog(home, team, stall_after=10_000, clock=lambda: time.time() + 200, overtime_grace=15)
    try:
        watchdog.check()
        retry_until(lambda: "interrupted" in _idle_reasons(home, team, "late"), 15, what="late's turn to stop")
        for _ in range(3):  # checked again: nobody is interrupted twice, early not at all
            watchdog._next = 0.0
            watchdog.check()
    finally:
        watchdog.close()
    told = [e.text for e in Mailbox(home, team).read("team-lead") if "past its own" in e.text]
    assert len(told) == 1 and told[0].startswith("late's call [1] Bash ran 2") and "100 s timeout" in told[0]
    assert _idle_reasons(home, team, "late") == ["interrupted"]  # once
    assert _idle_reasons(home, team, "early") == []  # still in its call
    member = TeamStore(home).get(team).member("late")
    assert member is not None and member.is_active and member.pid == late.pid  # it stays (not stopped)
    wait_status(home, team, "late", "idle")
    assert TeamStore(home).get(team).member("early").status == "busy"
