"""How much of a long text a model reads: the cap, and the marker that says what was cut.

The one place text is cut to a size before a model reads it: every tool's
result (``cap_result``, which ``agent.executor`` applies to each call: a tool's
``max_result_chars``, or ``DEFAULT_RESULT_CHARS`` for one that declares none; a
tool with ``max_result_tokens``, Read, has a result over it refused with an
error instead, since a cut file would read as the whole; an image or a PDF over
the API's limits is refused too), and what another agent wrote (``agent.peer_messages``: each message
a teammate or the lead receives, its summary and sender). Text one agent
writes for another is capped at ``PEER_TEXT_CHARS`` on the reading side,
because a teammate can write an inbox or a task file directly; SendMessage
also refuses more than that up front, so an honest sender is told at once.

Bash caps its output while it streams (``tools.shell.OutputCapture``: head
and tail kept, memory bounded), with the same marker.
"""

from __future__ import annotations

from swarm.models.messages import DocumentBlock, ImageBlock, TextBlock

ToolOutput = str | list[TextBlock | ImageBlock | DocumentBlock]
"""What a tool's ``run`` returns: the result's text, or its blocks (text, images, documents)."""

DEFAULT_RESULT_CHARS = 30_000
"""Most characters of a tool's result when the tool declares no ``max_result_chars`` (as Bash's output)."""
CHARS_PER_TOKEN = 4
"""The estimate of tokens a result costs: its characters over this."""
MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""The Messages API's limit for one image: 5 MB of base64 data."""
MAX_DOCUMENT_BYTES = 32 * 1024 * 1024
"""The Messages API's limit for a request, so for one PDF in it: 32 MB of base64 data."""

PEER_TEXT_CHARS = 30_000
"""Most characters of one message, one task listing or one task an agent reads from another (as Bash's output)."""
PEER_LABEL_CHARS = 200
"""Most characters of a message's summary or sender name as its recipient's model reads them."""


def truncation_marker(omitted: int, hint: str = "") -> str:
    """``[... N chars truncated ...]``, or ``[... N chars truncated; <hint> ...]``."""
    return f"[... {omitted} chars truncated{'; ' + hint if hint else ''} ...]"


def cap_text(text: str, limit: int, hint: str = "") -> str:
    """``text`` if it has at most ``limit`` characters, else its first ``limit`` and a line saying what was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n{truncation_marker(len(text) - limit, hint)}"


def cap_label(text: str, limit: int = PEER_LABEL_CHARS) -> str:
    """A one-line label (a summary, a name) cut to ``limit`` characters, ending in ``…`` when cut."""
    return text if len(text) <= limit else f"{text[:limit - 1]}…"


class ResultRefused(ValueError):
    """A tool's result the model must not get: too many tokens for the tool, or an image or PDF the API refuses."""


def estimate_tokens(text: str) -> int:
    """About how many tokens ``text`` costs a model: ``ceil(len / CHARS_PER_TOKEN)``."""
    return -(-len(text) // CHARS_PER_TOKEN)


def base64_size(raw_bytes: int) -> int:
    """The length of ``raw_bytes`` bytes once base64-encoded (what the API's size limits count)."""
    return 4 * -(-raw_bytes // 3)


def check_image_size(raw_bytes: int, what: str) -> None:
    """ResultRefused if an image of ``raw_bytes`` bytes is over the API's limit once encoded."""
    if base64_size(raw_bytes) > MAX_IMAGE_BYTES:
        raise ResultRefused(
            f"{what} is {raw_bytes:,} bytes, {base64_size(raw_bytes):,} once base64-encoded; the API accepts "
            f"images up to 5 MB ({MAX_IMAGE_BYTES:,} bytes) encoded, about 3.75 MB of file. Make a smaller copy "
            "(e.g. scale it down with Bash) and read that")


def check_document_size(raw_bytes: int, what: str) -> None:
    """ResultRefused if a PDF of ``raw_bytes`` bytes is over the API's request limit once encoded."""
    if base64_size(raw_bytes) > MAX_DOCUMENT_BYTES:
        raise ResultRefused(
            f"{what} is {raw_bytes:,} bytes, over the API's 32 MB limit for a request once base64-encoded; "
            "read fewer pages at a time")


def cap_result(output: ToolOutput, tool: str, *, max_chars: int | None, max_tokens: int | None,
               hint: str) -> ToolOutput:
    """``output`` as the model may read it: each text cut at ``max_chars`` (default ``DEFAULT_RESULT_CHARS``)
    with a marker naming ``hint``, or, with ``max_tokens``, the whole output or ResultRefused when its
    text is estimated over that; an image or a document over the API's limits is refused either way."""
    blocks = [TextBlock(text=output)] if isinstance(output, str) else output
    for block in blocks:
        if isinstance(block, ImageBlock):
            check_image_size(len(block.source.data) * 3 // 4, f"an image from {tool}")
        elif isinstance(block, DocumentBlock):
            check_document_size(len(block.source.data) * 3 // 4, f"a document from {tool}")
    if max_tokens is not None:
        tokens = sum(estimate_tokens(b.text) for b in blocks if isinstance(b, TextBlock))
        if tokens > max_tokens:
            raise ResultRefused(f"the result of {tool} would be about {tokens:,} tokens, more than the "
                                f"{max_tokens:,} one {tool} may return; {hint or 'ask for less'}")
        return output
    limit = DEFAULT_RESULT_CHARS if max_chars is None else max_chars
    if isinstance(output, str):
        return cap_text(output, limit, hint)
    return [TextBlock(text=cap_text(b.text, limit, hint)) if isinstance(b, TextBlock) else b for b in output]
