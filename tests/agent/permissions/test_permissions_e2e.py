"""Permission requests routed through the lead's inbox, with real teammate processes."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

from swarm.core.frames import (
    PermissionRequest,
    PermissionResponse,
    frame_text,
    parse_frame,
)
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.permlog import PermissionEvent, PermissionLog
from swarm.core.protocol import Member, RuleLists
from swarm.core.teams import TeamStore
from swarm.runtime.permission_desk import apply_policy, approve, deny, pending
from tests.backends.helpers import retry_until
from tests.agent.permissions.conftest import tool_results
from tests.teammate.conftest import idle_results


def _one_pending(home: Home, team: str, agent: str | None = None, timeout: float = 15) -> PermissionEvent:
    def found() -> list[PermissionEvent]:
        return [p for p in pending(home, team) if agent is None or p.agent == agent]

    retry_until(lambda: len(found()) == 1, timeout, what="a pending request")
    return found()[0]


def _results_settled(home: Home, team: str, name: str, count: int) -> list[dict]:  # type: ignore[type-arg]
    retry_until(lambda: len(tool_results(home, team, name)) >= count, 15, what=f"{count} tool results")
    return tool_results(home, team, name)


def test_approved_bash_runs_and_the_request_reached_the_lead(home: Home, team: str, workdir: Path,
                                                             start: Callable[..., Member]) -> None:
    start("w", "run touch ok.txt")
    request = _one_pending(home, team)
    assert (request.tool, request.input, request.suggestions) == ("Bash", {"command": "touch ok.txt",
                                                                           "run_in_background": False},
                                                                  ["Bash(touch:*)"])
    def requests() -> list[PermissionRequest]:
        frames = [parse_frame(e.text) for e in Mailbox(home, team).read("team-lead")]
        return [f for f in frames if isinstance(f, PermissionRequest)]

    retry_until(lambda: len(requests()) == 1, 10, what="the request in the lead's inbox")
    [frame] = requests()
    assert frame.request_id == request.request_id and frame.agent_id == "w@t"
    assert not (workdir / "ok.txt").exists()
    approve(home, team, request.request_id)
    retry_until(lambda: (workdir / "ok.txt").exists(), 10, what="the approved command to run")
    [result] = _results_settled(home, team, "w", 1)
    assert not result.get("is_error")
    assert PermissionLog(home, team).decision(request.request_id).by == "lead"  # type: ignore[union-attr]


def test_denied_call_tells_the_model_the_reason(home: Home, team: str, workdir: Path,
                                               start: Callable[..., Member]) -> None:
    start("w", "run touch no.txt")
    deny(home, team, _one_pending(home, team).request_id, reason="not on a Friday")
    [result] = _results_settled(home, team, "w", 1)
    assert result["is_error"] and "not on a Friday" in result["content"]
    assert not (workdir / "no.txt").exists()


def test_unanswered_request_times_out_to_a_denial(home: Home, team: str, workdir: Path,
                                                 start: Callable[..., Member]) -> None:
    start("w", "run touch late.txt", permission_timeout=1.0)
    request = _one_pending(home, team)
    [result] = _results_settled(home, team, "w", 1)
    assert result["is_error"] and "did not answer within 1s" in result["content"]
    decision = PermissionLog(home, team).decision(request.request_id)
    assert decision is not None and (decision.decision, decision.by) == ("deny", "timeout")
    assert pending(home, team) == []
    assert not (workdir / "late.txt").exists()


def test_always_adds_the_rule_so_the_next_call_does_not_ask(home: Home, team: str, workdir: Path,
                                                             start: Callable[..., Member]) -> None:
    start("w", "run touch one.txt")
    first = _one_pending(home, team)
    event = approve(home, team, first.request_id, always=True)
    assert event.rule_added == "Bash(touch:*)"
    member = TeamStore(home).get(team).member("w")
    assert member is not None and member.allowed_tools == ["Bash(touch:*)"]
    retry_until(lambda: (workdir / "one.txt").exists(), 10)
    # after the turn: sent while the touch's shell is still exiting, it would reach the model with the tool's
    # result, and the offline model finishes the rule in play ("ran it") rather than start another
    retry_until(lambda: idle_results(home, team, "w") == ["ran it"], 10, what="the first turn to end")
    Mailbox(home, team).send("w", "run touch two.txt", sender="team-lead")
    retry_until(lambda: (workdir / "two.txt").exists(), 10, what="the second call to run without asking")
    requests = [e for e in PermissionLog(home, team).events() if e.event == "request"]
    assert len(requests) == 1


def test_write_outside_cwd_refused_without_asking_unless_bypass(home: Home, team: str, tmp_path: Path,
                                                                start: Callable[..., Member]) -> None:
    outside = tmp_path / "outside.txt"
    start("w", f"write {outside}")
    [result] = _results_settled(home, team, "w", 1)
    assert result["is_error"] and "outside your working directory" in result["content"]
    assert not outside.exists()
    assert PermissionLog(home, team).events() == []
    start("b", f"write {outside}", permission_mode="bypassPermissions")
    retry_until(outside.exists, 10, what="bypassPermissions to allow the write")
    assert outside.read_text() == "written"
    assert PermissionLog(home, team).events() == []


def test_deny_rule_beats_allow_rule(home: Home, team: str, workdir: Path, start: Callable[..., Member]) -> None:
    start("w", "run rm -f keep.txt", allowed_tools=["Bash"], disallowed_tools=["Bash(rm:*)"])
    (workdir / "keep.txt").write_text("precious")
    [result] = _results_settled(home, team, "w", 1)
    assert result["is_error"] and "denied by rule Bash(rm:*)" in result["content"]
    assert (workdir / "keep.txt").exists()
    Mailbox(home, team).send("w", "run touch fine.txt", sender="team-lead")
    retry_until(lambda: (workdir / "fine.txt").exists(), 10, what="the allowed command")
    assert PermissionLog(home, team).events() == []


def test_lead_policy_answers_and_the_record_says_so(home: Home, team: str, workdir: Path,
                                                     start: Callable[..., Member]) -> None:
    def set_policy(t):  # type: ignore[no-untyped-def]
        t.lead_policy = RuleLists(allow=["Bash(touch:*)"], deny=["Bash(curl:*)"])

    TeamStore(home).modify(team, set_policy)
    start("w", "run touch policy.txt")
    request = _one_pending(home, team)
    [decision] = apply_policy(home, team)
    assert (decision.request_id, decision.decision, decision.by) == (request.request_id, "allow",
                                                                      "policy:Bash(touch:*)")
    retry_until(lambda: (workdir / "policy.txt").exists(), 10)
    Mailbox(home, team).send("w", "run curl http://127.0.0.1:9", sender="team-lead")
    blocked = _one_pending(home, team)
    [refusal] = apply_policy(home, team)
    assert (refusal.request_id, refusal.decision, refusal.by) == (blocked.request_id, "deny", "policy:Bash(curl:*)")
    results = _results_settled(home, team, "w", 2)
    assert "denied by lead policy Bash(curl:*)" in results[-1]["content"]


def test_stray_duplicate_and_malformed_responses_do_not_unblock(home: Home, team: str, workdir: Path,
                                                                start: Callable[..., Member]) -> None:
    start("a", "run touch a.txt")
    start("b", "run touch b.txt")
    req_a = _one_pending(home, team, "a")
    req_b = _one_pending(home, team, "b")
    mailbox = Mailbox(home, team)
    ok_a = frame_text(PermissionResponse(request_id=req_a.request_id, subtype="success"))
    mailbox.send("b", ok_a, sender="team-lead")  # a's answer in b's inbox
    mailbox.send("a", json.dumps({"type": "permission_response", "request_id": req_a.request_id,
                                  "subtype": "maybe"}), sender="team-lead")  # malformed
    mailbox.send("a", frame_text(PermissionResponse(request_id=req_a.request_id, subtype="success")),
                 sender="mallory")  # not from the lead
    time.sleep(1.0)  # asserting that nothing happens: give the teammates time to (wrongly) react
    assert not (workdir / "a.txt").exists() and not (workdir / "b.txt").exists()
    assert {p.request_id for p in pending(home, team)} == {req_a.request_id, req_b.request_id}
    approve(home, team, req_a.request_id)
    retry_until(lambda: (workdir / "a.txt").exists(), 10, what="a's approved call")
    mailbox.send("a", frame_text(PermissionResponse(request_id=req_a.request_id, subtype="success")),
                 sender="team-lead")  # duplicate
    approve(home, team, req_b.request_id)
    retry_until(lambda: (workdir / "b.txt").exists(), 10, what="b's approved call")
    member = TeamStore(home).get(team).member("a")
    assert member is not None and member.is_active


def test_request_that_cannot_be_written_fails_loudly(home: Home, team: str, workdir: Path,
                                                     start: Callable[..., Member]) -> None:
    start("w", "hello")
    retry_until(lambda: any(True for _ in Mailbox(home, team).read("team-lead")), 15, what="first idle")
    lead_inbox = home.inbox_path(team, "team-lead")
    lead_inbox.unlink()
    lead_inbox.mkdir()  # the lead's inbox can no longer be written
    log_path = PermissionLog(home, team).path
    log_path.unlink(missing_ok=True)
    log_path.mkdir()  # nor the permission record
    Mailbox(home, team).send("w", "run touch never.txt", sender="team-lead")
    [result] = _results_settled(home, team, "w", 1)
    assert result["is_error"] and "could not send the request to the lead" in result["content"]
    assert "the call was not run" in result["content"]
    assert not (workdir / "never.txt").exists()
