"""A conversation: the message list an agent sends to its model, mirrored to a transcript."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from swarm.agent.transcript import Transcript
from swarm.errors import StorageError
from swarm.models.messages import Message, TextBlock, ToolResultBlock, Usage

RESUMED_NOTE = ("interrupted: the agent stopped while this tool call was under way, so it was cut short: it may not "
                "have started, or have done part or all of its work; its effects are unknown. Check what it did "
                "before running it again.")
"""The result a resumed conversation gives a tool call the transcript has no result for. Nothing records
whether the call had started, so the note claims neither."""


class OwedSync:
    """The fsync a message added with ``sync_later`` still owes; ``pay`` does it once, on any thread.

    ``hand_over`` says another process is doing it (the delivery worker): ``pay`` then waits for that.
    """

    def __init__(self, transcript: Transcript) -> None:
        self._transcript = transcript
        self._lock = threading.Lock()
        self._settled = False
        self._error: StorageError | None = None
        self._elsewhere: Callable[[], None] | None = None

    def descriptor(self) -> int | None:
        """A copy of the transcript's descriptor, for another process to fsync (``Transcript.descriptor``)."""
        return self._transcript.descriptor()

    def hand_over(self, done: Callable[[], None]) -> None:
        """The fsync is under way elsewhere: ``done`` waits for it (``StorageError`` if it failed)."""
        self._elsewhere = done

    def pay(self) -> None:
        """Until the line is on disk: fsync it here, or wait for whoever is doing it; its error, if any."""
        with self._lock:
            if not self._settled:
                try:
                    (self._elsewhere or self._transcript.sync)()
                except StorageError as exc:
                    self._error = exc
                self._settled = True
        if self._error is not None:
            raise self._error


@dataclass
class Conversation:
    messages: list[Message] = field(default_factory=list)
    transcript: Transcript | None = None
    observer: Callable[[Message], None] | None = None
    """Called with every message added (progress of a background subagent)."""
    context_tokens: int = 0
    """Tokens the last model call carried (input, cached or not, and reply): what compaction watches."""
    compaction_retry_at: int = 0
    """After a failed compaction, ``context_tokens`` must reach this before the next try."""
    on_compacted: Callable[[int], None] | None = None
    """Called with how many messages a compaction summarised (a live view says so)."""
    owed_sync: OwedSync | None = None
    """The fsync a ``sync_later`` add still owes; ``make_durable`` settles it (tools run only after)."""

    @classmethod
    def resume(cls, transcript: Transcript) -> Conversation:
        """Reload the messages recorded in ``transcript``, repaired to be sendable.

        A crash between a model reply and its tool results leaves a ``tool_use``
        with no ``tool_result``, which the Messages API rejects. The repair —
        an error result for each such call — is recorded in the transcript like
        any other message, so the next resume finds a whole conversation.
        """
        conversation = cls(messages=transcript.messages(), transcript=transcript,
                           context_tokens=transcript.context_tokens())
        repair = _missing_results(conversation.messages)
        if repair is not None:
            conversation.add(repair, durable=True)
        return conversation

    def add(self, message: Message, *, delivered: Sequence[str] = (), durable: bool = False,
            usage: Usage | None = None, sync_later: bool = False) -> OwedSync | None:
        """Append ``message``; ``delivered`` inbox entries are recorded with it in one durable write.

        ``usage`` (a model reply's tokens, cache reads and writes included) goes into its transcript line.
        ``sync_later`` (with ``delivered``) returns that write's fsync instead of waiting for it, for
        another thread to ``pay`` while the model starts; ``make_durable`` waits for it before any tool.
        """
        self.messages.append(message)
        if self.observer is not None:
            self.observer(message)
        if usage is not None:
            self.context_tokens = usage.total
        if self.transcript is None:
            return None
        self.transcript.message(message, delivered=delivered, durable=durable, usage=usage, sync_later=sync_later)
        if not (sync_later and delivered and not durable):
            return None
        self.owed_sync = OwedSync(self.transcript)  # settling it covers any earlier one: fsync is per file
        return self.owed_sync

    def make_durable(self) -> None:
        """Until every message added is on disk: a tool's effects never come before the input that asked for them."""
        if self.owed_sync is not None:
            self.owed_sync.pay()
            self.owed_sync = None

    def replace(self, messages: list[Message], *, summarised: int, usage: Usage) -> None:
        """Continue from ``messages`` (a compaction, see ``agent.compaction``); the transcript keeps the old ones.

        ``summarised`` is how many messages ``messages`` stand for; ``usage`` the summary call's.
        """
        self.messages = list(messages)
        self.context_tokens = usage.output_tokens
        self.compaction_retry_at = 0
        if self.transcript is not None:
            self.transcript.compaction(self.messages, summarised=summarised, usage=usage)
        if self.on_compacted is not None:
            self.on_compacted(summarised)

    def add_user_text(self, text: str, *, delivered: Sequence[str] = ()) -> None:
        self.add(Message.user_text(text), delivered=delivered)

    @property
    def unfinished(self) -> bool:
        """The last message is the user's (a prompt or tool results): a turn was cut short and can go on."""
        return bool(self.messages) and self.messages[-1].role == "user"

    def last_text(self) -> str:
        for message in reversed(self.messages):
            if message.role == "assistant":
                return message.text()
        return ""


def _missing_results(messages: list[Message]) -> Message | None:
    """Error results for a trailing assistant tool call whose results were never recorded, if any."""
    if not messages or messages[-1].role != "assistant" or not messages[-1].tool_uses():
        return None
    results = [ToolResultBlock(tool_use_id=use.id, content=RESUMED_NOTE, is_error=True)
               for use in messages[-1].tool_uses()]
    return Message(role="user", content=[*results, TextBlock(text="(resumed after an interruption)")])
