"""A conversation: the message list an agent sends to its model, mirrored to a transcript."""

from __future__ import annotations

from dataclasses import dataclass, field

from swarm.agent.transcript import Transcript
from swarm.models.messages import ContentBlock, Message, TextBlock, ToolResultBlock


@dataclass
class Conversation:
    messages: list[Message] = field(default_factory=list)
    transcript: Transcript | None = None

    @classmethod
    def resume(cls, transcript: Transcript) -> Conversation:
        """Reload the messages recorded in ``transcript``, repaired to be sendable."""
        return cls(messages=_repair(transcript.messages()), transcript=transcript)

    def add(self, message: Message) -> None:
        self.messages.append(message)
        if self.transcript is not None:
            self.transcript.message(message)

    def add_user_text(self, text: str) -> None:
        self.add(Message.user_text(text))

    def last_text(self) -> str:
        for message in reversed(self.messages):
            if message.role == "assistant":
                return message.text()
        return ""


def _repair(messages: list[Message]) -> list[Message]:
    """Drop a trailing assistant tool call whose results were never recorded (crash mid-step)."""
    fixed = list(messages)
    if fixed and fixed[-1].role == "assistant" and fixed[-1].tool_uses():
        results: list[ContentBlock] = [
            ToolResultBlock(tool_use_id=use.id, content="interrupted: the agent stopped before this tool ran",
                            is_error=True)
            for use in fixed[-1].tool_uses()
        ]
        fixed.append(Message(role="user", content=results))
    if fixed and fixed[-1].role == "user" and all(isinstance(b, ToolResultBlock) for b in fixed[-1].content):
        fixed[-1].content.append(TextBlock(text="(resumed after an interruption)"))
    return fixed
