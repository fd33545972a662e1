"""The one small interface every model provider implements."""

from __future__ import annotations

import threading
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from swarm.models.messages import AssistantBlock, Message, Usage


Effort = Literal["low", "medium", "high", "xhigh", "max"]
"""How hard the model thinks (Claude Code's ``effort``); a provider maps it to its own parameters."""
EFFORTS: tuple[Effort, ...] = ("low", "medium", "high", "xhigh", "max")


class ToolSpec(BaseModel):
    """A tool as the model sees it."""

    name: str
    description: str
    input_schema: dict[str, Any]


class ModelRequest(BaseModel):
    system: str = ""
    messages: list[Message]
    tools: list[ToolSpec] = Field(default_factory=list)
    max_tokens: int = 8192
    summary: bool = False
    """The model is asked to summarise the conversation (compaction); sent like any other request."""
    effort: Effort | None = None
    """Thinking asked for; None: the model's default (no thinking parameters sent)."""

    @classmethod
    def of(cls, *, system: str, messages: list[Message], tools: list[ToolSpec], max_tokens: int,
           effort: Effort | None = None) -> ModelRequest:
        """A request from parts that are already models (the agent loop's): not validated again.

        Validating would visit every message of the conversation on every
        call, a cost that grows with the conversation; the request gets a
        shallow copy of the list (a provider's changes to it stay its own).
        """
        return cls.model_construct(system=system, messages=list(messages), tools=tools, max_tokens=max_tokens,
                                   summary=False, effort=effort)


StopReason = Literal["end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal", "pause_turn"]


class ModelResponse(BaseModel):
    content: list[AssistantBlock]
    stop_reason: StopReason | None = "end_turn"
    usage: Usage = Field(default_factory=Usage)
    model: str = ""

    def message(self) -> Message:
        return Message(role="assistant", content=list(self.content))


class ModelProvider(Protocol):
    """Turns a request into the model's next assistant message.

    Implementations raise ``swarm.errors.ModelError`` for failures that are
    final (after their own retries), with a message a user can act on.
    """

    @property
    def name(self) -> str:
        """Provider name, e.g. ``anthropic`` or ``scripted``."""
        ...

    @property
    def model(self) -> str:
        """The model id requests go to."""
        ...

    def complete(self, request: ModelRequest, stop: threading.Event | None = None) -> ModelResponse:
        """The model's answer to ``request``. Once ``stop`` is set (the turn was interrupted), an answer still
        arriving is abandoned at its next streamed event and ``swarm.errors.AnswerInterrupted`` raised."""
        ...

    def close(self) -> None:
        """Release connections; safe to call more than once."""
        ...
