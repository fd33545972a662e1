"""The frames an inbox entry's text may carry (docs/protocol.md, "Frames"), and who may send which.

``parse_frame`` turns an inbox entry's text into a typed frame or leaves it as
plain text; a malformed frame is text, never an exception.

Who may send which frame (``entry_frame``): a frame counts only when it came
through the structured path (``Mailbox.send_frame`` marks the entry
``structured``) and its sender may send it:

- ``shutdown_request``, ``permission_response``, ``plan_approval_response``:
  the lead (or the runtime);
- ``teammate_terminated`` and swarm's ``task_notification``: the runtime only;
- every frame that names its sender (``from``, ``agent_id``, ``assignedBy``):
  that member only, and the entry's own ``from`` must be the same name.

Anything else — a model's plain SendMessage text that looks like a frame, a
frame claiming another sender — is ordinary text.

A lead-only frame also needs the lead's signature: it counts only when the
reader's ``LeadVerifier`` (``swarm.core.signing``) verifies its entry — signed
by the lead's key, not stale, its ``msg_id`` not taken in before. A reader
without a verifier (the runtime reading the lead's inbox) never acts on one.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Container
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import ConfigDict, Field, StrictStr, TypeAdapter, ValidationError

from swarm.core.jsonfile import decode_json
from swarm.core.names import LEAD_NAME, RUNTIME_NAME
from swarm.core.protocol import CamelWire, InboxEntry, Wire, build_models

if TYPE_CHECKING:
    from swarm.core.signing import LeadVerifier

log = logging.getLogger(__name__)


class ShutdownRequest(CamelWire):
    type: Literal["shutdown_request"] = "shutdown_request"
    request_id: StrictStr
    sender: StrictStr = Field(alias="from")
    reason: str | None = None
    timestamp: StrictStr


class ShutdownApproved(CamelWire):
    type: Literal["shutdown_approved"] = "shutdown_approved"
    request_id: StrictStr
    sender: StrictStr = Field(alias="from")
    timestamp: StrictStr
    pane_id: str = ""
    backend_type: str = ""


class ShutdownRejected(CamelWire):
    type: Literal["shutdown_rejected"] = "shutdown_rejected"
    request_id: StrictStr
    sender: StrictStr = Field(alias="from")
    reason: StrictStr
    timestamp: StrictStr


class PlanApprovalRequest(CamelWire):
    type: Literal["plan_approval_request"] = "plan_approval_request"
    request_id: StrictStr
    sender: StrictStr = Field(alias="from")
    timestamp: StrictStr
    plan_file_path: str = ""
    plan_content: StrictStr


class PlanApprovalResponse(CamelWire):
    type: Literal["plan_approval_response"] = "plan_approval_response"
    request_id: StrictStr
    approved: bool
    feedback: str | None = None
    timestamp: StrictStr
    permission_mode: str | None = None
    plan_digest: str | None = None
    """sha256 (hex) of the plan approved: Claude Code acts on an approval only for the plan it submitted."""


def plan_digest(plan: str) -> str:
    """``planDigest`` of a plan as Claude Code computes it (sha256 of its UTF-8 text, hex)."""
    return hashlib.sha256(plan.encode("utf-8")).hexdigest()


class PermissionRequest(Wire):
    type: Literal["permission_request"] = "permission_request"
    request_id: StrictStr
    agent_id: StrictStr
    tool_name: StrictStr
    tool_use_id: StrictStr
    description: str = ""
    input: dict[str, Any]
    permission_suggestions: list[Any] = Field(default_factory=list)
    cwd: str | None = None
    """swarm: the absolute directory the call runs in (a subagent's own); its input's file path is absolute too."""


class PermissionResponseBody(Wire):
    updated_input: dict[str, Any] | None = None
    permission_updates: list[Any] | None = None


class PermissionResponse(Wire):
    type: Literal["permission_response"] = "permission_response"
    request_id: StrictStr
    subtype: Literal["success", "error"]
    response: PermissionResponseBody | None = None
    error: str | None = None


class IdleNotification(CamelWire):
    type: Literal["idle_notification"] = "idle_notification"
    sender: StrictStr = Field(alias="from")
    timestamp: StrictStr
    idle_reason: Literal["available", "interrupted", "failed"] | None = None
    summary: str | None = None
    completed_task_id: str | None = None
    completed_status: Literal["resolved", "blocked", "failed"] | None = None
    failure_reason: str | None = None
    result: str | None = None


class TaskAssignment(CamelWire):
    type: Literal["task_assignment"] = "task_assignment"
    task_id: StrictStr
    subject: StrictStr
    description: str = ""
    assigned_by: StrictStr
    timestamp: StrictStr


class TaskCompleted(CamelWire):
    type: Literal["task_completed"] = "task_completed"
    sender: str | None = Field(default=None, alias="from")
    task_id: StrictStr
    task_subject: str | None = None
    timestamp: str | None = None


class TeammateTerminated(Wire):
    type: Literal["teammate_terminated"] = "teammate_terminated"
    message: StrictStr


class BackgroundAgentEnded(Wire):
    """swarm: one of the recipient's own background subagents ended (the runtime tells its parent)."""

    type: Literal["task_notification"] = "task_notification"
    task_id: StrictStr
    status: StrictStr
    text: StrictStr
    """The ``<task-notification>`` block the parent's model reads."""


Frame = Annotated[
    Union[
        ShutdownRequest,
        ShutdownApproved,
        ShutdownRejected,
        PlanApprovalRequest,
        PlanApprovalResponse,
        PermissionRequest,
        PermissionResponse,
        IdleNotification,
        TaskAssignment,
        TaskCompleted,
        TeammateTerminated,
        BackgroundAgentEnded,
    ],
    Field(discriminator="type"),
]
_FRAME: TypeAdapter[Frame] = TypeAdapter(Frame, config=ConfigDict(defer_build=True))
FRAME_TYPES = frozenset(
    m.model_fields["type"].default
    for m in (
        ShutdownRequest, ShutdownApproved, ShutdownRejected, PlanApprovalRequest,
        PlanApprovalResponse, PermissionRequest, PermissionResponse, IdleNotification,
        TaskAssignment, TaskCompleted, TeammateTerminated, BackgroundAgentEnded,
    )
)



def build_frames() -> None:
    """Build the frame validator now rather than on first use (its ``defer_build``), as ``protocol.build_models``."""
    _FRAME.rebuild()  # a no-op once built


def build_validators() -> None:
    """The inbox, team-file and frame validators built now: for a process about to take stop signals as
    exceptions (a lead's ``StopSignals``, a teammate's handlers). Left to their first use, one such exception
    raised inside pydantic's build comes out as a ``SchemaError``, and the process ends with a traceback instead
    of stopping as asked (seen: ``swarm up`` given SIGTERM as its first frame arrived)."""
    build_models()
    build_frames()


def parse_frame(text: str) -> Frame | str:
    """The typed frame carried by ``text``, or ``text`` itself if it is not one.

    Never raises: text that is not JSON, JSON that is not an object, an unknown
    ``type`` or a frame with missing/invalid fields all come back as text.
    """
    if not text.startswith("{"):
        return text
    try:
        obj = decode_json(text)
    except ValueError:
        return text
    if not isinstance(obj, dict) or obj.get("type") not in FRAME_TYPES:
        return text
    try:
        return _FRAME.validate_python(obj)
    except ValidationError as exc:
        log.warning("malformed frame treated as text", extra={"type": obj.get("type"), "errors": exc.error_count()})
        return text


LEAD_FRAMES: tuple[type[Wire], ...] = (ShutdownRequest, PermissionResponse, PlanApprovalResponse)
"""Frames only the lead (or the runtime acting for it) may send."""


def entry_frame(entry: InboxEntry, lead: LeadVerifier | None = None, *,
                unmarked_from: Container[str] = frozenset()) -> Frame | str:
    """The frame ``entry`` carries if it came through the structured path from a sender that may send it.

    Everything else — plain text, text that merely looks like a frame, a frame
    from the wrong sender — comes back as the entry's text, to be read as an
    ordinary message. Never raises.

    A lead-only frame counts only when ``lead`` verifies its entry: unsigned,
    forged, replayed or stale ones (and every one, without ``lead``) are text.

    ``unmarked_from`` names Claude Code teammates: their entries carry no swarm
    marker, so a frame *about themselves* (idle, shutdown answers, plan and
    permission requests — ``from`` must still be theirs) counts from them
    without it; a lead or runtime frame never does.
    """
    if not entry.structured and entry.sender not in unmarked_from:
        return entry.text
    frame = parse_frame(entry.text)
    if isinstance(frame, str):
        return frame
    if not entry.structured and isinstance(frame, (*LEAD_FRAMES, TeammateTerminated, BackgroundAgentEnded)):
        return entry.text
    if isinstance(frame, LEAD_FRAMES) and not _lead_verified(entry, lead):
        return entry.text
    if _may_send(entry.sender, frame):
        return frame
    log.warning("frame from a sender that may not send it treated as text",
                extra={"type": frame.type, "sender": entry.sender})
    return entry.text


def _lead_verified(entry: InboxEntry, lead: LeadVerifier | None) -> bool:
    if lead is not None and lead.verified(entry):
        return True
    log.warning("lead frame that could not be verified treated as text",
                extra={"sender": entry.sender, "msg_id": entry.msg_id})
    return False


def _may_send(sender: str, frame: Frame) -> bool:
    if isinstance(frame, LEAD_FRAMES):
        return sender in (LEAD_NAME, RUNTIME_NAME)
    if isinstance(frame, (TeammateTerminated, BackgroundAgentEnded)):
        return sender == RUNTIME_NAME
    if isinstance(frame, PermissionRequest):
        return frame.agent_id.split("@", 1)[0] == sender
    if isinstance(frame, TaskAssignment):
        return frame.assigned_by == sender
    claimed = getattr(frame, "sender", None)
    return claimed is None or claimed == sender


def frame_text(frame: Wire) -> str:
    """Serialise a frame for an inbox entry's ``text``."""
    data = frame.model_dump(mode="json", by_alias=True, exclude_none=True)
    return json.dumps(data, ensure_ascii=False)
