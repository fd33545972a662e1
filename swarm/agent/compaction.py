"""Compaction: when a conversation nears the model's context window, its older turns become a summary.

Claude Code's rule, kept here: the context in use is what the last model
call carried (its input, cached or not, plus its reply). When that reaches
the threshold, before the next call, the model is asked for a summary of
the conversation so far, and the conversation continues from that summary:

- The summary request is the conversation itself with the summary
  instruction added to its last (user) message, under the same system
  prompt, tools and effort (thinking parameters are part of what the cache
  compares), so it reads the prompt cache like any other call.
- The conversation after compaction is one user message — the summary,
  introduced as the continuation of an earlier session — followed by the
  step in progress: the last assistant tool call and its results, when the
  turn was in the middle of one (a ``tool_result`` needs its ``tool_use``),
  or, for a fresh prompt, the prompt's own blocks after the summary.
  System prompt and tools are untouched, so their cached prefix stays
  byte-identical across the compaction.
- The transcript stays complete: every earlier message line stays on disk,
  and a ``compaction`` record with the new messages is appended.
  ``Transcript.messages`` (what a resume reads) starts at the last one.
- The messages that were summarised are dropped from memory, so what a
  long-lived teammate holds is bounded by the window, not by its age.

Settings, as Claude Code reads them: the window is the model's (200,000
tokens; 1,000,000 for a ``[1m]`` model) or ``CLAUDE_CODE_AUTO_COMPACT_WINDOW``;
the threshold is the window less ``BUFFER`` (less a tenth of a small
window), lowered — never raised — by ``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE``
(a percentage of the window); ``DISABLE_AUTO_COMPACT=1`` turns it off. A
failed summary call is logged and recorded, and the conversation goes on
whole; it is tried again only once the context has grown by another
``RETRY_GROWTH`` of the window.

A request the API refuses as too long (``PromptTooLong``) is compacted
whatever the threshold (``compact``, called by the loop, which then tries
the call once more; auto-compaction turned off does not stop this, only a
policy of None does). The summary request itself must fit: while the API
says it is too long, its oldest messages are dropped (about half each time,
``_trimmed``), up to ``MAX_SUMMARY_TRIMS`` times; the newest step and the
instruction are always sent.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from swarm.agent.conversation import Conversation
from swarm.agent.instructions import is_context_block
from swarm.errors import ModelError, PromptTooLong
from swarm.models.base import Effort, ModelProvider, ModelRequest, ModelResponse, ToolSpec
from swarm.models.catalog import model_info
from swarm.models.messages import Message, TextBlock, ToolResultBlock, Usage

log = logging.getLogger(__name__)

BUFFER = 13_000
"""Tokens kept free below the window (Claude Code's auto-compact buffer)."""
RETRY_GROWTH = 0.05
SUMMARY_MAX_TOKENS = 8192
MAX_SUMMARY_TRIMS = 4
"""Times a summary request the API finds too long is sent again with its oldest messages dropped."""
OMITTED = "[The earliest part of this conversation was omitted here to fit the model's context window.]"

SUMMARY_INSTRUCTION = """\
Your task is to create a detailed summary of the conversation so far, which will replace it: \
the conversation will continue from your summary alone, so keep everything needed to carry on.

Include, in this order:
1. The requests and intents of the user and of your team lead, in detail.
2. Key technical concepts, decisions and constraints.
3. Files and code examined, changed or created, with the important snippets and why they matter.
4. Errors met and how they were fixed.
5. Tasks completed, tasks pending, and messages you still owe teammates or the lead.
6. What you were doing right before this summary, and the next step, quoting the latest instruction.

Reply with the summary as plain text only; do not call any tools."""

CONTINUATION = ("This session is being continued from a previous conversation that ran out of context. "
                "The summary below covers the earlier portion of the conversation.\n\n{summary}")


@dataclass(frozen=True)
class CompactionPolicy:
    """When to compact. ``window`` None: the model's own window."""

    window: int | None = None
    percent: float | None = None
    """``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE``: compact at this percentage of the window if that is earlier."""
    enabled: bool = True

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> CompactionPolicy:
        """The policy Claude Code's variables in ``env`` ask for; unusable values are ignored."""
        enabled = env.get("DISABLE_AUTO_COMPACT", "").strip().lower() not in ("1", "true", "yes")
        window = _positive(env.get("CLAUDE_CODE_AUTO_COMPACT_WINDOW"))
        return cls(window=int(window) if window else None,
                   percent=_positive(env.get("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE")), enabled=enabled)

    def threshold(self, model: str) -> int:
        """Context tokens at which a conversation with ``model`` is compacted."""
        window = self.window or model_info(model).context_window
        limit = window - min(BUFFER, window // 10)
        if self.percent is not None and 0 < self.percent <= 100:
            limit = min(limit, int(window * self.percent / 100))
        return max(1, limit)


def _positive(raw: str | None) -> float | None:
    try:
        value = float(raw) if raw else None
    except ValueError:
        return None
    return value if value is not None and value > 0 else None


def compact_if_due(policy: CompactionPolicy | None, provider: ModelProvider, conversation: Conversation, *,
                   system: str, tools: Sequence[ToolSpec], effort: Effort | None = None,
                   before: Callable[[], None] | None = None, stop: threading.Event | None = None) -> Usage:
    """Compact ``conversation`` if its context reached the threshold; the usage of the summary call (or none).
    ``before`` runs just before a compaction starts (the agent's ``PreCompact`` hooks); ``stop`` set cuts the
    summary short (``AnswerInterrupted``: the conversation stays whole)."""
    if policy is None or not policy.enabled or not conversation.unfinished:
        return Usage()
    threshold = policy.threshold(provider.model)
    if conversation.context_tokens < max(threshold, conversation.compaction_retry_at):
        return Usage()
    if before is not None:
        before()
    return compact(provider, conversation, system=system, tools=tools, threshold=threshold, effort=effort,
                   stop=stop) or Usage()


def compact(provider: ModelProvider, conversation: Conversation, *, system: str, tools: Sequence[ToolSpec],
            threshold: int, effort: Effort | None = None, stop: threading.Event | None = None) -> Usage | None:
    """Replace ``conversation`` (ending with a user message) by its summary, whatever its size.

    Returns the summary call's usage, or None when the summary failed (logged
    and recorded; the conversation stays whole and is not tried again before
    it has grown by ``RETRY_GROWTH`` of ``threshold``).
    """
    messages = [*conversation.messages[:-1], _with_instruction(conversation.messages[-1])]
    try:
        response = _summarise(provider, messages, system=system, tools=tools, effort=effort, stop=stop)
    except ModelError as exc:
        conversation.compaction_retry_at = conversation.context_tokens + int(threshold * RETRY_GROWTH) + 1
        log.warning("compaction failed; the conversation goes on whole", extra={"error": str(exc)})
        if conversation.transcript is not None:
            conversation.transcript.event("compaction_failed", error=str(exc), context_tokens=conversation.context_tokens)
        return None
    summary = response.message().text().strip() or "(the summary came back empty)"
    before = len(conversation.messages)
    conversation.replace(_continued(summary, conversation.messages), summarised=before, usage=response.usage)
    log.info("conversation compacted", extra={"messages": before, "context_tokens": conversation.context_tokens})
    return response.usage


def _summarise(provider: ModelProvider, messages: list[Message], *, system: str, tools: Sequence[ToolSpec],
               effort: Effort | None, stop: threading.Event | None) -> ModelResponse:
    """The summary call; a request too long for the window goes again with its oldest messages dropped."""
    trims = 0
    while True:
        request = ModelRequest(system=system, tools=list(tools), max_tokens=SUMMARY_MAX_TOKENS, summary=True,
                               messages=messages, effort=effort)
        try:
            return provider.complete(request, stop)
        except PromptTooLong:
            shorter = _trimmed(messages)
            if shorter is None or trims >= MAX_SUMMARY_TRIMS:
                raise
            trims += 1
            log.info("summary request too long; oldest messages dropped",
                     extra={"messages": len(messages), "kept": len(shorter)})
            messages = shorter


def _trimmed(messages: list[Message]) -> list[Message] | None:
    """``messages`` without about their older half, still a valid conversation; None if nothing can go.

    The cut falls on a user message after the first, from the middle on,
    that is not the last one (the last holds the newest step and the
    instruction). That message loses its tool results (their calls are
    dropped) and opens with ``OMITTED``, so the request still starts with a
    user message and every ``tool_use`` it sends keeps its result.
    """
    last = len(messages) - 1
    cut = next((i for i in range(max(1, len(messages) // 2), last) if messages[i].role == "user"), None)
    if cut is None:
        return None
    kept = [b for b in messages[cut].content if not isinstance(b, ToolResultBlock)]
    return [Message(role="user", content=[TextBlock(text=OMITTED), *kept]), *messages[cut + 1:]]


def _with_instruction(last: Message) -> Message:
    """The conversation's last (user) message with the summary instruction added as a last text block."""
    return Message(role="user", content=[*last.content, TextBlock(text=SUMMARY_INSTRUCTION)])


def _continued(summary: str, messages: list[Message]) -> list[Message]:
    """The conversation from ``summary`` on, keeping the step in progress (see the module docstring)
    and the context block of the first message (CLAUDE.md instructions, git status as it was)."""
    context = [b for b in messages[0].content if isinstance(b, TextBlock) and is_context_block(b.text)][:1]
    head = TextBlock(text=CONTINUATION.format(summary=summary))
    last = messages[-1]
    in_step = any(isinstance(b, ToolResultBlock) for b in last.content)
    if in_step and len(messages) >= 2 and messages[-2].role == "assistant":
        return [Message(role="user", content=[head, *context]), messages[-2], last]
    kept = [b for b in last.content if not isinstance(b, ToolResultBlock) and b not in context]
    return [Message(role="user", content=[head, *context, *kept])]
