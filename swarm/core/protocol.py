"""Pydantic models for everything on disk and in inboxes (spec/PROTOCOL.md).

Models keep unknown fields (``extra="allow"``) and are dumped with
``exclude_unset`` so a rewrite preserves what another writer put there.
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

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictStr,
    TypeAdapter,
    ValidationError,
)
from pydantic.alias_generators import to_camel

from swarm.core.names import LEAD_NAME, RUNTIME_NAME

if TYPE_CHECKING:
    from swarm.core.signing import LeadVerifier

log = logging.getLogger(__name__)

CLAUDE_RUNTIME = "claude"
"""``Member.runtime`` of a teammate that is a Claude Code CLI session."""
CLAUDE_JOINED = "running"
"""``Member.status`` of a claude teammate from when it took its initial prompt until it leaves."""
GONE_STATUSES = ("stopped", "dead", "killed")
"""``Member.status`` values of a member that left the team."""
COLORS = ("blue", "green", "yellow", "purple", "orange", "pink", "cyan", "red")


class _Wire(BaseModel):
    """Base for models read from or written to disk."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)

    def wire(self) -> dict[str, Any]:
        """The JSON object as it goes on disk."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


class _CamelWire(_Wire):
    model_config = ConfigDict(extra="allow", populate_by_name=True, alias_generator=to_camel, defer_build=True)


# -- inbox ---------------------------------------------------------------


class InboxEntry(_Wire):
    sender: StrictStr = Field(alias="from")
    text: StrictStr
    timestamp: StrictStr
    read: bool = False
    color: str | None = None
    summary: str | None = None
    type: str | None = None
    msg_id: str | None = None
    msg_v: int | None = Field(default=None, alias="msgV")
    from_plugin: str | None = None
    lead_sig: str | None = None
    structured: bool | None = None
    """swarm: the text is a protocol frame written through the structured path (``Mailbox.send_frame``)."""


# -- team file -------------------------------------------------------------


class Member(_CamelWire):
    agent_id: StrictStr
    name: StrictStr
    agent_type: str | None = None
    model: str | None = None
    prompt: str | None = None
    color: str | None = None
    plan_mode_required: bool = False
    joined_at: int = 0
    tmux_pane_id: str = ""
    cwd: str = ""
    worktree_path: str | None = None
    session_id: str | None = None
    subscriptions: list[Any] = Field(default_factory=list)
    backend_type: str | None = None
    is_active: bool | None = None
    mode: str | None = None
    pid: int | None = None
    # swarm additions (Claude Code ignores them):
    proc_start: float | None = None
    """The teammate process's create time, to tell a live pid from a reused one."""
    proc_token: str | None = None
    """Unique token in the teammate's environment (``SWARM_PROC_TOKEN``); every process carrying it is the teammate's."""
    stop_notice: str | None = None
    """Set while the runtime forces the member down: whoever records the end records it as ``killed`` with this notice."""
    status: str | None = None
    """``starting``, ``idle``, ``busy`` or ``stopped``, written by the teammate."""
    last_activity: int | None = None
    """Epoch ms of the teammate's last turn start or end."""
    tokens: int | None = None
    """Tokens the teammate's model has used so far."""
    cache_read_tokens: int | None = None
    """Of those, input tokens read from the prompt cache."""
    cache_creation_tokens: int | None = None
    """Of those, input tokens written to the prompt cache."""
    playbook: str | None = None
    """Scripted-model playbook path, when the teammate runs offline."""
    tmux_socket: str | None = None
    """tmux server (socket name or path) holding the teammate's pane."""
    worktree_branch: str | None = None
    """Branch swarm created for the teammate's worktree (``swarm/<team>/<name>``)."""
    worktree_base: str | None = None
    """Commit sha the worktree started from; "commits ahead" are counted from it."""
    worktree_repo: str | None = None
    """Main working tree of the repository holding the worktree."""
    allowed_tools: list[str] | None = None
    """Allow rules for this teammate (from --allowed-tools and `swarm approve --always`)."""
    disallowed_tools: list[str] | None = None
    runtime: str | None = None
    """``claude``: a Claude Code CLI swarm started in a pane (``runtime.claude_teammate``). Claude Code
    owns ``isActive`` there (busy, not alive); swarm's ``status`` says whether it is still in the team."""

    def present(self) -> bool:
        """Running in the team: started, and not stopped, dead or killed since.

        For swarm's own teammates that is ``isActive``; for a Claude Code teammate swarm started,
        whose ``isActive`` Claude Code flips between busy and idle, it is swarm's ``status``.
        """
        if self.runtime == CLAUDE_RUNTIME:
            return self.status == CLAUDE_JOINED
        return bool(self.is_active)

    def idle(self) -> bool:
        """Between turns: swarm's own teammates say so in ``status``, Claude Code in ``isActive``."""
        if self.runtime == CLAUDE_RUNTIME:
            return self.present() and not self.is_active
        return self.status == "idle"


class Activity(_CamelWire):
    """swarm: what a teammate is doing, kept beside the team file (``Home.activity_path``).

    It changes on every turn; keeping it out of ``config.json`` means the team
    file is rewritten only when membership changes (fewer fsyncs, and fewer
    writes racing Claude Code's own rewrites of that file). ``TeamStore.get``
    lays it over the member entry.
    """

    status: Literal["idle", "busy"]
    last_activity: int
    tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0


class RuleLists(_CamelWire):
    """Permission rules in Claude Code's syntax (swarm addition to the team file)."""

    allow: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)
    ask: list[str] = Field(default_factory=list)


class LeadPolicy(RuleLists):
    """Rules the lead side answers permission requests with, and what to do with plans."""

    plans: Literal["ask", "approve", "deny"] = "ask"


class TeamFile(_CamelWire):
    name: StrictStr
    description: str | None = None
    created_at: int = 0
    lead_agent_id: StrictStr
    lead_session_id: str | None = None
    members: list[Member] = Field(default_factory=list)
    # swarm additions:
    permissions: RuleLists | None = None
    """Rules every teammate applies before asking the lead."""
    lead_policy: LeadPolicy | None = None
    """Rules the lead side uses to answer requests automatically (allow / deny)."""
    settings_digests: dict[str, str] | None = None
    """Settings file path -> sha256 (or ``absent``) as the lead side first saw it; allow rules of a
    file that no longer matches are ignored (``agent/permissions/settings.py``)."""

    def member(self, name: str) -> Member | None:
        return next((m for m in self.members if m.name == name), None)


# -- tasks -------------------------------------------------------------------


class Task(_CamelWire):
    id: StrictStr
    subject: StrictStr
    description: str = ""
    active_form: str | None = None
    owner: str | None = None
    status: Literal["pending", "in_progress", "completed"] = "pending"
    blocks: list[str] = Field(default_factory=list)
    blocked_by: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


# -- frames ------------------------------------------------------------------


class ShutdownRequest(_CamelWire):
    type: Literal["shutdown_request"] = "shutdown_request"
    request_id: StrictStr
    sender: StrictStr = Field(alias="from")
    reason: str | None = None
    timestamp: StrictStr


class ShutdownApproved(_CamelWire):
    type: Literal["shutdown_approved"] = "shutdown_approved"
    request_id: StrictStr
    sender: StrictStr = Field(alias="from")
    timestamp: StrictStr
    pane_id: str = ""
    backend_type: str = ""


class ShutdownRejected(_CamelWire):
    type: Literal["shutdown_rejected"] = "shutdown_rejected"
    request_id: StrictStr
    sender: StrictStr = Field(alias="from")
    reason: StrictStr
    timestamp: StrictStr


class PlanApprovalRequest(_CamelWire):
    type: Literal["plan_approval_request"] = "plan_approval_request"
    request_id: StrictStr
    sender: StrictStr = Field(alias="from")
    timestamp: StrictStr
    plan_file_path: str = ""
    plan_content: StrictStr


class PlanApprovalResponse(_CamelWire):
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


class PermissionRequest(_Wire):
    type: Literal["permission_request"] = "permission_request"
    request_id: StrictStr
    agent_id: StrictStr
    tool_name: StrictStr
    tool_use_id: StrictStr
    description: str = ""
    input: dict[str, Any]
    permission_suggestions: list[Any] = Field(default_factory=list)


class PermissionResponseBody(_Wire):
    updated_input: dict[str, Any] | None = None
    permission_updates: list[Any] | None = None


class PermissionResponse(_Wire):
    type: Literal["permission_response"] = "permission_response"
    request_id: StrictStr
    subtype: Literal["success", "error"]
    response: PermissionResponseBody | None = None
    error: str | None = None


class IdleNotification(_CamelWire):
    type: Literal["idle_notification"] = "idle_notification"
    sender: StrictStr = Field(alias="from")
    timestamp: StrictStr
    idle_reason: Literal["available", "interrupted", "failed"] | None = None
    summary: str | None = None
    completed_task_id: str | None = None
    completed_status: Literal["resolved", "blocked", "failed"] | None = None
    failure_reason: str | None = None
    result: str | None = None


class TaskAssignment(_CamelWire):
    type: Literal["task_assignment"] = "task_assignment"
    task_id: StrictStr
    subject: StrictStr
    description: str = ""
    assigned_by: StrictStr
    timestamp: StrictStr


class TaskCompleted(_CamelWire):
    type: Literal["task_completed"] = "task_completed"
    sender: str | None = Field(default=None, alias="from")
    task_id: StrictStr
    task_subject: str | None = None
    timestamp: str | None = None


class TeammateTerminated(_Wire):
    type: Literal["teammate_terminated"] = "teammate_terminated"
    message: StrictStr


class TaskNotification(_Wire):
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
        TaskNotification,
    ],
    Field(discriminator="type"),
]
_FRAME: TypeAdapter[Frame] = TypeAdapter(Frame, config=ConfigDict(defer_build=True))
FRAME_TYPES = frozenset(
    m.model_fields["type"].default
    for m in (
        ShutdownRequest, ShutdownApproved, ShutdownRejected, PlanApprovalRequest,
        PlanApprovalResponse, PermissionRequest, PermissionResponse, IdleNotification,
        TaskAssignment, TaskCompleted, TeammateTerminated, TaskNotification,
    )
)


def parse_frame(text: str) -> Frame | str:
    """The typed frame carried by ``text``, or ``text`` itself if it is not one.

    Never raises: text that is not JSON, JSON that is not an object, an unknown
    ``type`` or a frame with missing/invalid fields all come back as text.
    """
    if not text.startswith("{"):
        return text
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        return text
    if not isinstance(obj, dict) or obj.get("type") not in FRAME_TYPES:
        return text
    try:
        return _FRAME.validate_python(obj)
    except ValidationError as exc:
        log.warning("malformed frame treated as text", extra={"type": obj.get("type"), "errors": exc.error_count()})
        return text


def build_models() -> None:
    """Build the inbox and team-file models now rather than on first use (their ``defer_build``).

    A one-shot command builds only what it uses; a long-lived process that
    wants its first send at full speed calls this at start.
    """
    for model in (InboxEntry, Member, TeamFile, Activity):
        model.model_rebuild(force=True)


LEAD_FRAMES: tuple[type[_Wire], ...] = (ShutdownRequest, PermissionResponse, PlanApprovalResponse)
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
    if not entry.structured and isinstance(frame, (*LEAD_FRAMES, TeammateTerminated, TaskNotification)):
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
    if isinstance(frame, (TeammateTerminated, TaskNotification)):
        return sender == RUNTIME_NAME
    if isinstance(frame, PermissionRequest):
        return frame.agent_id.split("@", 1)[0] == sender
    if isinstance(frame, TaskAssignment):
        return frame.assigned_by == sender
    claimed = getattr(frame, "sender", None)
    return claimed is None or claimed == sender


def frame_text(frame: _Wire) -> str:
    """Serialise a frame for an inbox entry's ``text``."""
    data = frame.model_dump(mode="json", by_alias=True, exclude_none=True)
    return json.dumps(data, ensure_ascii=False)
