"""The coordinator answers each request with the lead policy first, then the person (or a denial)."""

from __future__ import annotations

from pathlib import Path

from swarm.core.clock import now_ms
from swarm.core.home import Home
from swarm.core.permlog import PermissionEvent, PermissionLog
from swarm.core.protocol import LeadPolicy, Member
from swarm.core.teams import TeamStore
from swarm.runtime.lead_pump import LeadPump


def _request(home: Home, request_id: str, command: str) -> None:
    PermissionLog(home, "t").record_request(PermissionEvent(
        event="request", request_id=request_id, ts=now_ms(), agent="w", tool="Bash",
        input={"command": command}, description=command, suggestions=[]))


def test_request_newer_than_the_policy_pass_is_still_answered_by_policy(home: Home, tmp_path: Path) -> None:
    store = TeamStore(home)
    store.create("t")
    store.add_member("t", Member(agent_id="w@t", name="w", cwd=str(tmp_path)))

    def policy(team):  # type: ignore[no-untyped-def]
        team.lead_policy = LeadPolicy(allow=["Bash(git merge:*)"])

    store.modify("t", policy)
    coordinator = LeadPump(home, "t")  # headless: no one to ask
    try:
        _request(home, "perm-1-a", "git merge -q topic")  # arrives after apply_policy, before answering
        _request(home, "perm-2-b", "curl http://example.invalid")
        coordinator._answer_pending()
    finally:
        coordinator.close()
    log = PermissionLog(home, "t")
    first, second = log.decision("perm-1-a"), log.decision("perm-2-b")
    assert first is not None and (first.decision, first.by) == ("allow", "policy:Bash(git merge:*)")
    assert second is not None and (second.decision, second.by) == ("deny", "headless")
