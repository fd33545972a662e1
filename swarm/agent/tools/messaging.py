"""SendMessage: talk to teammates through their inboxes.

``message`` is plain text, or a structured reply: ``shutdown_response``
(answering a shutdown request; approving stops this agent after the current
step) or ``plan_approval_response`` (a lead answering a teammate's plan).
Structured replies are turned into protocol frames here, so a plain-text
message that merely looks like a frame is never treated as one.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from swarm.agent.tools.base import Tool, ToolContext, ToolError
from swarm.core.clock import now_iso
from swarm.core.names import BROADCAST, LEAD_NAME
from swarm.core.protocol import (
    PlanApprovalResponse,
    ShutdownApproved,
    ShutdownRejected,
    frame_text,
)
from swarm.errors import SwarmError


class ShutdownResponse(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: Literal["shutdown_response"]
    request_id: str = Field(description="The requestId of the shutdown_request being answered.")
    approve: bool = Field(description="true to stop now, false to keep working.")
    reason: str | None = Field(default=None, description="Why (required when rejecting).")


class PlanApprovalReply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: Literal["plan_approval_response"]
    request_id: str = Field(description="The requestId of the plan_approval_request being answered.")
    approve: bool
    feedback: str | None = None
    permission_mode: str | None = Field(default=None, description="Mode the teammate switches to on approval.")


class SendMessageInput(BaseModel):
    model_config = ConfigDict(extra="ignore")

    to: str = Field(description="A teammate's name, or '*' for every member except you.")
    message: str | ShutdownResponse | PlanApprovalReply = Field(
        description="Plain text, or a structured shutdown_response / plan_approval_response object.")
    summary: str | None = Field(default=None, description="A 5-10 word preview of the message.")


class SendMessage(Tool[SendMessageInput]):
    name = "SendMessage"
    description = (
        "Send a message to a teammate's inbox (or '*' for all). Use plain text for normal messages. "
        "Answer a shutdown_request with message={type:'shutdown_response', request_id, approve, reason}."
    )
    input_model = SendMessageInput
    read_only = True

    def run(self, args: SendMessageInput, ctx: ToolContext) -> str:
        if ctx.mailbox is None or ctx.team is None:
            raise ToolError("SendMessage needs a team: this agent is not a teammate")
        message = args.message
        if isinstance(message, ShutdownResponse):
            return self._shutdown(message, ctx)
        if isinstance(message, PlanApprovalReply):
            text = frame_text(PlanApprovalResponse(
                request_id=message.request_id, approved=message.approve, feedback=message.feedback,
                timestamp=now_iso(), permission_mode=message.permission_mode))
            return self._send(ctx, args.to, text, args.summary)
        return self._send(ctx, args.to, message, args.summary)

    def _shutdown(self, reply: ShutdownResponse, ctx: ToolContext) -> str:
        if reply.approve:
            frame = frame_text(ShutdownApproved(request_id=reply.request_id, sender=ctx.agent_name,
                                                timestamp=now_iso(), pane_id=ctx.pane_id,
                                                backend_type=ctx.backend_type))
            self._send(ctx, LEAD_NAME, frame, "shutdown approved")
            ctx.shutdown_decision = True
            ctx.cancel.set()
            return "Shutdown approved; this agent stops after this step."
        if not reply.reason:
            raise ToolError("rejecting a shutdown needs a reason")
        frame = frame_text(ShutdownRejected(request_id=reply.request_id, sender=ctx.agent_name,
                                            reason=reply.reason, timestamp=now_iso()))
        self._send(ctx, LEAD_NAME, frame, "shutdown rejected")
        ctx.shutdown_decision = False
        return "Shutdown rejected; keep working."

    def _send(self, ctx: ToolContext, to: str, text: str, summary: str | None) -> str:
        if ctx.mailbox is None:
            raise ToolError("SendMessage needs a team: this agent is not a teammate")
        try:
            written = ctx.mailbox.send(to, text, sender=ctx.agent_name, summary=summary, color=ctx.color)
        except SwarmError as exc:
            raise ToolError(str(exc)) from exc
        who = "everyone" if to == BROADCAST else to
        return f"Message sent to {who} ({len(written)} inbox{'es' if len(written) != 1 else ''})."
