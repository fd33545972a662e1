"""The scripted model: deterministic, offline, driven by a playbook.

It answers through the same ``ModelProvider`` interface as a real model, so
its tool calls run through the same agent loop and tools. Per call:

1. Continue an unfinished multi-step rule: the one whose last step's tool
   calls the incoming tool results answer, else the one whose last step was
   text only. Steps continue whatever the tool results say.
2. Otherwise the first rule (in file order) whose ``on`` accepts the incoming
   message and whose ``match`` regex is found in the incoming text.
3. Otherwise the ``[default]`` text reply, which quotes the first line.

Messages that arrive during a turn reach the model as text blocks after the
tool results (``arrivals``). A run that goes on takes no notice of them, but
they are kept: the reply that ends the turn also starts the first rule their
text matches (as a prompt), so a message sent to a busy teammate is answered in
that turn, as a real model would, instead of being left unanswered.

The incoming text is the latest user message: its text blocks (except
``<system-reminder>`` context blocks) and tool result contents, in order,
joined with newlines. A rule's ``system`` regex, when given, must also be
found in the request's system prompt (e.g. to answer as one subagent type). Tool use ids count per
provider (``toolu_scripted_0001``). Usage is approximate: ``ceil(chars / 4)``,
at least 1, for the whole request (input) and the reply (output).
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from swarm.errors import AnswerInterrupted
from swarm.models.base import ModelRequest, ModelResponse
from swarm.models.messages import (
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from swarm.models.playbook import Playbook, Reply, load_playbook, render, render_value

log = logging.getLogger(__name__)

SCRIPTED = "scripted"
CONTEXT_TAG = "<system-reminder>"
"""Text blocks starting with this carry context, not the message (see ``swarm.agent.instructions``)."""
_TEAMMATE_TAG = re.compile(r"</?teammate-message[^>]*>")


@dataclass(frozen=True)
class Incoming:
    """What the model is answering: the latest user message, flattened."""

    text: str
    kind: Literal["prompt", "tool_result"]
    tool_result_ids: frozenset[str] = frozenset()
    arrivals: str = ""
    """In a tool result message, its text blocks: messages that arrived during the turn."""

    @property
    def first_line(self) -> str:
        """The first non-blank line, stripped, without <teammate-message> tags ("" if none)."""
        bare = _TEAMMATE_TAG.sub("", self.text)
        return next((line.strip() for line in bare.splitlines() if line.strip()), "")


@dataclass
class _Run:
    """A rule being played step by step."""

    rule_index: int
    steps: list[Reply]
    values: dict[str, str]
    next_step: int = 0
    waiting_for: set[str] = field(default_factory=set)

    @property
    def finished(self) -> bool:
        return self.next_step >= len(self.steps)


class ScriptedProvider:
    """``ModelProvider`` that plays a playbook; with none, it only gives the default reply.

    ``variables`` (e.g. ``agent_name``, ``team``) fill slots and
    override the playbook's ``[vars]``; regex groups override both.
    """

    def __init__(
        self,
        playbook: Playbook | Path | None = None,
        *,
        variables: Mapping[str, str] | None = None,
    ) -> None:
        if isinstance(playbook, Path):
            playbook = load_playbook(playbook)
        self._playbook = Playbook() if playbook is None else playbook
        self._variables = dict(variables or {})
        self._playbook.check_slots(self._variables)
        self._lock = threading.Lock()
        self._tool_ids = 0
        self._fired: set[int] = set()
        self._waiting: dict[str, _Run] = {}
        self._parked: _Run | None = None
        self._arrivals: list[str] = []
        """Messages that arrived while a run went on: started when a reply would end the turn."""
        self._tally = _Tally()
        self.usage = Usage()

    @property
    def name(self) -> str:
        return SCRIPTED

    @property
    def model(self) -> str:
        return SCRIPTED

    @property
    def playbook(self) -> Playbook:
        return self._playbook

    def close(self) -> None:
        """Nothing to release: the scripted model holds no connections."""

    def complete(self, request: ModelRequest, stop: threading.Event | None = None) -> ModelResponse:
        if stop is not None and stop.is_set():
            raise AnswerInterrupted("the turn was interrupted before the scripted model answered")
        if request.summary:
            return self._summary(request)
        incoming = incoming_of(request.messages)
        with self._lock:
            run = self._continuation(incoming)
            if run is not None and incoming.arrivals:
                self._arrivals.append(incoming.arrivals)
            content = self._play(run or self._start(incoming, request.system), incoming)
            if self._arrivals and not any(isinstance(b, ToolUseBlock) for b in content):
                content += self._answer_arrivals(request.system)
            usage = Usage(input_tokens=self._tally.input_tokens(request),
                          output_tokens=approx_tokens(content_text(content)))
            self.usage = self.usage + usage
        has_tools = any(isinstance(b, ToolUseBlock) for b in content)
        return ModelResponse(content=content, stop_reason="tool_use" if has_tools else "end_turn",
                             usage=usage, model=SCRIPTED)

    def _summary(self, request: ModelRequest) -> ModelResponse:
        """A compaction's summary: an ``on = "summary"`` rule's text, else a built-in one; rules in play are left alone."""
        incoming = incoming_of(request.messages)
        latest = next((_flatten(m).first_line for m in reversed(request.messages)
                       if m.role == "user" and _flatten(m).kind == "prompt" and _flatten(m).first_line), "")
        text = f"Summary of {len(request.messages)} earlier messages. The latest request: {latest}"
        with self._lock:
            for rule in self._playbook.rules:
                found = rule.pattern.search(incoming.text) if rule.on == "summary" else None
                if found is not None and rule.accepts("summary", request.system):
                    text = render(rule.replies()[0].text or "", self._match_values(incoming, found))
                    break
            usage = Usage(input_tokens=self._tally.input_tokens(request), output_tokens=approx_tokens(text))
            self.usage = self.usage + usage
        return ModelResponse(content=[TextBlock(text=text)], stop_reason="end_turn", usage=usage, model=SCRIPTED)

    def _next_reply(self, run: _Run | None, incoming: Incoming) -> tuple[Reply, dict[str, str]]:
        if run is None:
            return Reply(text=self._playbook.default.text), self._base_values(incoming)
        reply = run.steps[run.next_step]
        run.next_step += 1
        log.debug("scripted rule played", extra={"rule": run.rule_index, "step": run.next_step})
        return reply, run.values

    def _answer_arrivals(self, system: str) -> list[TextBlock | ToolUseBlock]:
        """The turn would end: the first step of the rule the kept arrivals match (none: nothing more)."""
        arrived = Incoming(text="\n".join(self._arrivals), kind="prompt")
        self._arrivals.clear()
        run = self._start(arrived, system)
        return [] if run is None else self._play(run, arrived)

    def _play(self, run: _Run | None, incoming: Incoming) -> list[TextBlock | ToolUseBlock]:
        """The next step of ``run`` (None: the default reply), rendered; an unfinished run is kept for later."""
        reply, values = self._next_reply(run, incoming)
        content = self._render(reply, values)
        self._remember(run, content)
        return content

    def _continuation(self, incoming: Incoming) -> _Run | None:
        for tool_use_id in incoming.tool_result_ids:
            run = self._waiting.get(tool_use_id)
            if run is not None:
                for waited in run.waiting_for:
                    self._waiting.pop(waited, None)
                run.waiting_for.clear()
                return run
        run, self._parked = self._parked, None
        return run

    def _start(self, incoming: Incoming, system: str) -> _Run | None:
        for index, rule in enumerate(self._playbook.rules):
            if (rule.once and index in self._fired) or not rule.accepts(incoming.kind, system):
                continue
            found = rule.pattern.search(incoming.text)
            if found is None:
                continue
            self._fired.add(index)
            return _Run(index, rule.replies(), self._match_values(incoming, found))
        return None

    def _base_values(self, incoming: Incoming) -> dict[str, str]:
        return {"incoming": incoming.text, "first_line": incoming.first_line,
                **self._playbook.vars, **self._variables}

    def _match_values(self, incoming: Incoming, found: re.Match[str]) -> dict[str, str]:
        """Built-ins < [vars] < provider variables < numbered groups < named groups."""
        values = self._base_values(incoming)
        groups = [found.group(0), *found.groups()]
        values.update({str(i): g or "" for i, g in enumerate(groups)})
        values.update({k: v or "" for k, v in found.groupdict().items()})
        return values

    def _render(self, reply: Reply, values: Mapping[str, str]) -> list[TextBlock | ToolUseBlock]:
        content: list[TextBlock | ToolUseBlock] = []
        text = render(reply.text, values) if reply.text is not None else ""
        if text or not reply.tool_calls:
            content.append(TextBlock(text=text))
        for call in reply.tool_calls:
            self._tool_ids += 1
            content.append(ToolUseBlock(id=f"toolu_scripted_{self._tool_ids:04d}", name=call.name,
                                        input=render_value(call.input, values)))
        return content

    def _remember(self, run: _Run | None, content: list[TextBlock | ToolUseBlock]) -> None:
        """Keep an unfinished run: under its tool use ids, or parked if the step was text only."""
        if run is None or run.finished:
            return
        ids = {b.id for b in content if isinstance(b, ToolUseBlock)}
        if not ids:
            self._parked = run
            return
        run.waiting_for = ids
        for tool_use_id in ids:
            self._waiting[tool_use_id] = run


def incoming_of(messages: list[Message]) -> Incoming:
    """The latest user message, flattened; an empty prompt if there is none."""
    for message in reversed(messages):
        if message.role == "user":
            return _flatten(message)
    return Incoming(text="", kind="prompt")


def _flatten(message: Message) -> Incoming:
    parts: list[str] = []
    texts: list[str] = []
    result_ids: set[str] = set()
    for block in message.content:
        if isinstance(block, TextBlock) and block.text.startswith(CONTEXT_TAG):
            continue  # the context block (project instructions, git status): not what the agent was told to do
        if isinstance(block, TextBlock):
            parts.append(block.text)
            texts.append(block.text)
        elif isinstance(block, ToolResultBlock):
            parts.append(block.text())
            result_ids.add(block.tool_use_id)
    if not result_ids:
        return Incoming(text="\n".join(parts), kind="prompt")
    return Incoming(text="\n".join(parts), kind="tool_result", tool_result_ids=frozenset(result_ids),
                    arrivals="\n".join(texts))


def approx_tokens(text: str) -> int:
    """``ceil(len(text) / 4)``, at least 1."""
    return max(1, -(-len(text) // 4))


class _Tally:
    """The input token estimate of ``request_text``, without re-reading the whole conversation every call.

    Each message's text length is measured once (messages of a conversation
    are the same objects from call to call), so a call costs what its new
    messages cost, not what the conversation has grown to.
    """

    def __init__(self) -> None:
        self._lengths: dict[int, tuple[Message, int]] = {}
        """id(message) -> (the message, kept so its id is not reused; its text length).

        Pruned to the current request's messages once it holds twice as many (after a compaction)."""
        self._tools: tuple[tuple[int, ...], int] | None = None
        self._prefix: tuple[int, Message | None, Message | None, int] = (0, None, None, 0)
        """The last call's messages: how many, the first and last (the same objects), and their characters.

        A conversation only grows between compactions, so the next call adds its new messages to that sum."""
        self.measured = 0
        """Messages measured so far (what a call costs grows with this, not with the conversation)."""
        self.visited = 0
        """Messages looked at so far, measured or found measured (also flat per call as the conversation grows)."""

    def input_tokens(self, request: ModelRequest) -> int:
        parts = 1 + len(request.tools) + len(request.messages)
        chars = len(request.system) + self._tool_chars(request) + (parts - 1)
        chars += self._message_chars(request.messages)
        if len(self._lengths) > 2 * len(request.messages) + 64:  # messages compacted away: let them go
            keep = {id(m) for m in request.messages}
            self._lengths = {key: value for key, value in self._lengths.items() if key in keep}
        return max(1, -(-chars // 4))

    def _message_chars(self, messages: list[Message]) -> int:
        """Characters of ``messages``: the last call's sum plus the new ones when they continue it."""
        count, first, last, chars = self._prefix
        if count and len(messages) >= count and messages[0] is first and messages[count - 1] is last:
            total = chars + sum(self._length(message) for message in messages[count:])
        else:
            total = sum(self._length(message) for message in messages)
        self._prefix = (len(messages), messages[0] if messages else None, messages[-1] if messages else None, total)
        return total

    def _length(self, message: Message) -> int:
        self.visited += 1
        known = self._lengths.get(id(message))
        if known is not None and known[0] is message:
            return known[1]
        self.measured += 1
        length = len(content_text(message.content))
        self._lengths[id(message)] = (message, length)
        return length

    def _tool_chars(self, request: ModelRequest) -> int:
        key = tuple(map(id, request.tools))  # tools build their spec once: same objects every call
        if self._tools is None or self._tools[0] != key:
            self._tools = (key, sum(len(json.dumps(t.model_dump(), sort_keys=True)) for t in request.tools))
        return self._tools[1]


def request_text(request: ModelRequest) -> str:
    """Everything the request sends, as text, for the input token estimate."""
    parts = [request.system]
    parts += [json.dumps(tool.model_dump(), sort_keys=True) for tool in request.tools]
    for message in request.messages:
        parts.append(content_text(message.content))
    return "\n".join(parts)


def content_text(content: Sequence[object]) -> str:
    """Text of blocks: text, tool result content, tool name + JSON input."""
    parts: list[str] = []
    for block in content:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ToolResultBlock):
            parts.append(block.text())
        elif isinstance(block, ToolUseBlock):
            parts.append(block.name + json.dumps(block.input, sort_keys=True))
    return "\n".join(parts)
