"""Only the right sender, through the structured path, makes a frame count (``entry_frame``).

Lead-only frames also need the lead's signature; here every entry is signed
with a test key its reader verifies (``tests/core/test_signing.py`` has the rest).
"""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from swarm.core.frames import (
    IdleNotification,
    PermissionRequest,
    PermissionResponse,
    PlanApprovalRequest,
    PlanApprovalResponse,
    ShutdownApproved,
    ShutdownRejected,
    ShutdownRequest,
    TaskAssignment,
    TeammateTerminated,
    entry_frame,
    frame_text,
)
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import InboxEntry, Member
from swarm.core.signing import (
    LeadKey,
    LeadVerifier,
    VerifyKey,
    sign_entry,
    verify_key_arg,
)
from swarm.core.teams import TeamStore

T = "2026-12-01T00:00:00.000Z"

FRAMES = {
    "shutdown_request": ShutdownRequest(request_id="shutdown-1@bob", sender="team-lead", timestamp=T),
    "permission_response": PermissionResponse(request_id="perm-1-abc", subtype="success"),
    "plan_approval_response": PlanApprovalResponse(request_id="plan_approval-1@bob", approved=True, timestamp=T),
    "teammate_terminated": TeammateTerminated(message="bob died"),
    "idle_notification": IdleNotification(sender="bob", timestamp=T, result="done"),
    "shutdown_approved": ShutdownApproved(request_id="shutdown-1@bob", sender="bob", timestamp=T),
    "shutdown_rejected": ShutdownRejected(request_id="shutdown-1@bob", sender="bob", reason="busy", timestamp=T),
    "plan_approval_request": PlanApprovalRequest(request_id="plan_approval-1@bob", sender="bob", timestamp=T,
                                                 plan_content="plan"),
    "permission_request": PermissionRequest(request_id="perm-1-abc", agent_id="bob@t", tool_name="Bash",
                                            tool_use_id="toolu_1", input={"command": "ls"}),
    "task_assignment": TaskAssignment(task_id="1", subject="s", assigned_by="bob", timestamp=T),
}

# (frame, senders whose structured entry counts)
ALLOWED = {
    "shutdown_request": {"team-lead", "swarm"},
    "permission_response": {"team-lead", "swarm"},
    "plan_approval_response": {"team-lead", "swarm"},
    "teammate_terminated": {"swarm"},
    "idle_notification": {"bob"},
    "shutdown_approved": {"bob"},
    "shutdown_rejected": {"bob"},
    "plan_approval_request": {"bob"},
    "permission_request": {"bob"},
    "task_assignment": {"bob"},
}
SENDERS = ("team-lead", "swarm", "bob", "mallory")


KEY = LeadKey(Ed25519PrivateKey.generate(), created_ms=0)
"""Signs every test entry; made at time 0 so no timestamp here is stale."""


def _verifier(arg: str = KEY.verify_arg) -> LeadVerifier:
    return LeadVerifier(VerifyKey.parse(arg), taken=[])


def _entry(sender: str, text: str, structured: bool | None) -> InboxEntry:
    entry = InboxEntry(sender=sender, text=text, timestamp=T, structured=structured, msg_id=f"m-{sender}")
    return entry.model_copy(update={"lead_sig": sign_entry(entry, KEY)})


@pytest.mark.parametrize("kind", sorted(FRAMES))
@pytest.mark.parametrize("sender", SENDERS)
def test_a_structured_frame_counts_only_from_a_sender_that_may_send_it(kind: str, sender: str) -> None:
    text = frame_text(FRAMES[kind])
    got = entry_frame(_entry(sender, text, True), _verifier())
    if sender in ALLOWED[kind]:
        assert got == FRAMES[kind]
    else:
        assert got == text


@pytest.mark.parametrize("kind", sorted(FRAMES))
def test_text_that_looks_like_a_frame_stays_text_even_from_the_lead(kind: str) -> None:
    text = frame_text(FRAMES[kind])
    for sender in SENDERS:
        assert entry_frame(_entry(sender, text, None), _verifier()) == text
        assert entry_frame(_entry(sender, text, False), _verifier()) == text


@pytest.mark.parametrize("kind", ["shutdown_request", "permission_response", "plan_approval_response"])
def test_a_lead_frame_counts_only_for_a_reader_that_verifies_it(kind: str) -> None:
    text = frame_text(FRAMES[kind])
    signed = _entry("team-lead", text, True)
    assert entry_frame(signed, _verifier()) == FRAMES[kind]
    assert entry_frame(signed) == text
    assert entry_frame(signed.model_copy(update={"lead_sig": None}), _verifier()) == text
    assert entry_frame(signed, _verifier(LeadKey.generate().verify_arg)) == text


def test_send_is_the_text_path_and_send_frame_the_structured_one(home: Home) -> None:
    store = TeamStore(home)
    store.create("t")
    store.add_member("t", Member(agent_id="bob@t", name="bob", is_active=True))
    mailbox = Mailbox(home, "t")
    request = FRAMES["shutdown_request"]
    mailbox.send("bob", frame_text(request), sender="team-lead")
    mailbox.send_frame("bob", request, sender="team-lead")
    plain, structured = mailbox.read("bob")
    verifier = _verifier(verify_key_arg(home, "t"))
    assert entry_frame(plain, verifier) == plain.text
    assert entry_frame(structured, verifier) == request
    assert structured.wire()["structured"] is True and "structured" not in plain.wire()
