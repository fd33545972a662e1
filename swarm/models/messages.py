"""Conversation messages in the Anthropic Messages API shape.

These cross process and file boundaries (transcripts, model requests), so they
are pydantic models. ``Message.model_dump(mode="json")`` is exactly what the
Messages API accepts.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field


class TextBlock(BaseModel):
    type: Literal["text"] = "text"
    text: str


class ToolUseBlock(BaseModel):
    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)


ImageMediaType = Literal["image/png", "image/jpeg", "image/gif", "image/webp"]
"""The image formats the Messages API accepts."""


class ImageSource(BaseModel):
    type: Literal["base64"] = "base64"
    media_type: ImageMediaType
    data: str
    """The image's bytes, base64-encoded."""


class ImageBlock(BaseModel):
    """An image, in a tool result (Read of a PNG, JPEG, GIF or WebP)."""

    type: Literal["image"] = "image"
    source: ImageSource


class DocumentSource(BaseModel):
    type: Literal["base64"] = "base64"
    media_type: Literal["application/pdf"] = "application/pdf"
    data: str
    """The PDF's bytes, base64-encoded."""


class DocumentBlock(BaseModel):
    """A PDF, in a tool result (Read of a PDF, or of some of its pages)."""

    type: Literal["document"] = "document"
    source: DocumentSource


ResultContent = Annotated[Union[TextBlock, ImageBlock, DocumentBlock], Field(discriminator="type")]
"""A block a tool result may carry: text, an image, a document."""


class ThinkingBlock(BaseModel):
    """The model's thinking, with the signature the API checks when it is sent back (kept byte for byte)."""

    type: Literal["thinking"] = "thinking"
    thinking: str
    signature: str


class RedactedThinkingBlock(BaseModel):
    """Thinking the API encrypted (``data``): never shown, sent back unchanged."""

    type: Literal["redacted_thinking"] = "redacted_thinking"
    data: str


class ToolResultBlock(BaseModel):
    """What a tool call gave: plain text (most tools), or blocks of text, images and documents (Read)."""

    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: str | list[ResultContent]
    is_error: bool = False

    def text(self) -> str:
        """The result as text: the text itself, or its blocks' texts and a line naming each image or document."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(block_text(block) for block in self.content)


def block_text(block: TextBlock | ImageBlock | DocumentBlock) -> str:
    """A text block's text; for an image or a document, ``[<media type> image, N bytes]`` (N decoded)."""
    if isinstance(block, TextBlock):
        return block.text
    data = block.source.data.rstrip("=")
    size = len(data) * 3 // 4
    kind = "image" if isinstance(block, ImageBlock) else "document"
    return f"[{block.source.media_type} {kind}, {size:,} bytes]"


ContentBlock = Annotated[Union[ThinkingBlock, RedactedThinkingBlock, TextBlock, ToolUseBlock, ToolResultBlock],
                        Field(discriminator="type")]
AssistantBlock = Annotated[Union[ThinkingBlock, RedactedThinkingBlock, TextBlock, ToolUseBlock],
                          Field(discriminator="type")]
"""What a model answers with; thinking blocks come first and go back to the API unchanged, in order."""


class Message(BaseModel):
    model_config = ConfigDict(extra="ignore")

    role: Literal["user", "assistant"]
    content: list[ContentBlock]

    @classmethod
    def user_text(cls, text: str) -> Message:
        return cls(role="user", content=[TextBlock(text=text)])

    def text(self) -> str:
        """The text blocks joined, without tool or thinking blocks."""
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    def tool_uses(self) -> list[ToolUseBlock]:
        return [b for b in self.content if isinstance(b, ToolUseBlock)]


class Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_input_tokens=self.cache_read_input_tokens + other.cache_read_input_tokens,
            cache_creation_input_tokens=self.cache_creation_input_tokens + other.cache_creation_input_tokens,
        )

    @property
    def total(self) -> int:
        return (self.input_tokens + self.output_tokens
                + self.cache_read_input_tokens + self.cache_creation_input_tokens)
