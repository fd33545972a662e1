"""Plan mode: read-only until the lead approves the plan; rejection feedback reaches the model."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from swarm.core.frames import PlanApprovalRequest, parse_frame
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.permlog import PermissionEvent
from swarm.core.protocol import Member
from swarm.core.teams import TeamStore
from swarm.runtime.permission_desk import answer_plan, pending
from tests.backends.helpers import retry_until
from tests.agent.permissions.conftest import tool_results


def _plan_request(home: Home, team: str) -> PermissionEvent:
    retry_until(lambda: any(p.kind == "plan" for p in pending(home, team)), 15, what="a plan request")
    return next(p for p in pending(home, team) if p.kind == "plan")


def test_plan_reject_then_approve(home: Home, team: str, workdir: Path, start: Callable[..., Member]) -> None:
    start("p", "implement", plan_mode_required=True)
    first = _plan_request(home, team)
    assert first.plan == "1. write feature.py\n2. run it"
    def plan_frames() -> list[PlanApprovalRequest]:
        frames = [parse_frame(e.text) for e in Mailbox(home, team).read("team-lead")]
        return [f for f in frames if isinstance(f, PlanApprovalRequest)]

    retry_until(lambda: len(plan_frames()) == 1, 10, what="the plan in the lead's inbox")
    [frame] = plan_frames()
    assert frame.plan_content == first.plan and Path(frame.plan_file_path).read_text() == first.plan
    results = tool_results(home, team, "p")
    assert results[0]["is_error"] and "plan mode" in results[0]["content"]  # Write refused before approval
    assert not (workdir / "feature.py").exists()

    answer_plan(home, team, first.request_id, approved=False, feedback="add a test first")
    retry_until(lambda: len(tool_results(home, team, "p")) >= 3, 15, what="the rest of the turn")
    results = tool_results(home, team, "p")
    assert "add a test first" in results[1]["content"] and "still in plan mode" in results[1]["content"]
    assert results[2]["is_error"]  # still refused after the rejection
    assert not (workdir / "feature.py").exists()

    Mailbox(home, team).send("p", "implement", sender="team-lead")
    second = _plan_request(home, team)
    assert second.request_id != first.request_id
    answer_plan(home, team, second.request_id, approved=True)
    retry_until(lambda: (workdir / "feature.py").exists(), 15, what="the write after approval")
    member = TeamStore(home).get(team).member("p")
    assert member is not None and member.mode == "default"
    results = tool_results(home, team, "p")
    assert "approved the plan" in results[4]["content"] and not results[5].get("is_error")


def test_exit_plan_mode_without_a_plan_submits_the_text_of_its_message(
        home: Home, team: str, start: Callable[..., Member]) -> None:
    """Claude Code's ExitPlanMode has no ``plan`` field (its plan is in a file); a model may send ``{}``."""
    start("q", "propose", plan_mode_required=True)
    assert _plan_request(home, team).plan == "1. read the code\n2. change it"
