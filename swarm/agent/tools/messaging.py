"""SendMessage: talk to teammates through their inboxes.

``message`` is plain text, or a structured reply: ``shutdown_response``
(answering a shutdown request; handed to the agent's ``ShutdownAnswerer``,
which sends the frame and, on approval, ends the run after this step) or
``plan_approval_response`` (a lead answering a teammate's plan). A reply's
``request_id`` may also be spelled ``requestId``, as the request carried it. Only
structured replies go out through the mailbox's structured path; plain text
that merely looks like a frame stays text for its recipient. Text over
``PEER_TEXT_CHARS`` is refused: its reader would see it cut
(``agent.peer_messages``).
"""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from swarm.agent.output_cap import PEER_TEXT_CHARS
from swarm.agent.subagents import message_child
from swarm.agent.tool_api.base import Tool
from swarm.agent.tool_api.context import ToolContext, ToolError
from swarm.agent.tools.team_tools import require_team
from swarm.core.names import BROADCAST
from swarm.errors import SwarmError


class ShutdownResponse(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: Literal["shutdown_response"]
    request_id: str = Field(validation_alias=AliasChoices("request_id", "requestId"),
                            description="The requestId of the shutdown_request being answered.")
    approve: bool = Field(description="true to stop now, false to keep working.")
    reason: str | None = Field(default=None, description="Why (required when rejecting).")


class ShutdownAsk(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: Literal["shutdown_request"]
    reason: str | None = Field(default=None, description="Why the teammate should stop.")


class PlanApprovalReply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    type: Literal["plan_approval_response"]
    request_id: str = Field(validation_alias=AliasChoices("request_id", "requestId"),
                            description="The requestId of the plan_approval_request being answered.")
    approve: bool
    feedback: str | None = None
    permission_mode: str | None = Field(default=None, description="Mode the teammate switches to on approval.")


class SendMessageInput(BaseModel):
    model_config = ConfigDict(extra="ignore")

    to: str = Field(description="A teammate's name, or '*' for every member except you.")
    message: str | ShutdownResponse | ShutdownAsk | PlanApprovalReply = Field(
        description="Plain text, or a structured shutdown_response / plan_approval_response object.")
    summary: str | None = Field(default=None, description="A 5-10 word preview of the message.")


class ShutdownAnswerer(Protocol):
    """Owns the agent's shutdown state (a teammate's lifecycle); the tool only hands it the model's answer."""

    def answer_shutdown(self, request_id: str, approve: bool, reason: str | None) -> str:
        """Send the answer; return the tool result, raise ToolError, or EndRun when approving."""
        ...


class SendMessage(Tool[SendMessageInput]):
    name = "SendMessage"
    description = (
        "Send a message to a teammate's inbox (or '*' for all), or to one of your background subagents by its "
        "name or agentId (a finished one resumes with it). Use plain text for normal messages. "
        "Answer a shutdown_request with message={type:'shutdown_response', request_id, approve, reason}. "
        "A team lead asks a teammate to stop with message={type:'shutdown_request', reason} and answers a "
        "plan_approval_request with message={type:'plan_approval_response', request_id, approve, feedback}."
    )
    input_model = SendMessageInput
    read_only = True

    def __init__(self, shutdown: ShutdownAnswerer | None = None) -> None:
        self.shutdown = shutdown

    def run(self, args: SendMessageInput, ctx: ToolContext) -> str:
        message = args.message
        if isinstance(message, str) and ctx.services.agents is not None and not ctx.identity.subagent:  # a child's are its parent's
            answer = message_child(ctx.services.agents, ctx, args.to, message)
            if answer is not None:
                return answer
        mailbox = ctx.services.mailbox
        if mailbox is None or ctx.identity.team is None:
            raise ToolError(f"no subagent named {args.to!r}, and this agent is not in a team: SendMessage reaches "
                            "your background subagents (by name or agentId) and, in a team, your teammates")
        try:
            if isinstance(message, ShutdownResponse):
                if self.shutdown is None:
                    raise ToolError("this agent has no shutdown request to answer")
                return self.shutdown.answer_shutdown(message.request_id, message.approve, message.reason)
            if isinstance(message, ShutdownAsk):
                return require_team(ctx).request_shutdown(args.to, message.reason)
            if isinstance(message, PlanApprovalReply):
                return require_team(ctx).answer_plan(message.request_id, message.approve, message.feedback,
                                                     message.permission_mode)
            if len(message) > PEER_TEXT_CHARS:  # its reader would see it cut (agent.peer_messages): say so now
                raise ToolError(f"message is {len(message)} characters; a teammate reads at most {PEER_TEXT_CHARS} — "
                                "write the rest to a file and send its path")
            written = mailbox.send(args.to, message, sender=ctx.identity.name, author="model",  # the model's words
                                   summary=args.summary, color=ctx.identity.color)
        except SwarmError as exc:
            raise ToolError(str(exc)) from exc
        who = "everyone" if args.to == BROADCAST else args.to
        return f"Message sent to {who} ({len(written)} inbox{'es' if len(written) != 1 else ''})."
