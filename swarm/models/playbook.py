"""Playbooks for the scripted model: the file format, loading, templating.

A playbook is TOML or JSON (see ``docs/playbook.md``)::

    [vars]                # optional defaults for {slots}
    [default]             # optional: text = "..." when no rule matches
    [[rules]]             # in order, first match wins
    match = 'regex'       # searched in the incoming text ("" matches anything)
    on = "any"            # "prompt" | "tool_result" | "any" | "summary"
    once = false
    text = "..."          # and/or
    tool_calls = [{ name = "Bash", input = { command = "ls" } }]
    # or, instead of text/tool_calls:
    [[rules.steps]]       # one reply per model call

Templates fill ``{name}`` / ``{0}`` slots in ``text`` and in every
string inside a tool call's ``input`` (recursively). ``{{`` and ``}}`` are
literal braces; anything else in braces (``{"a": 1}``) is left as written.
Unknown slots are a ``UsageError`` when the provider is built, because
every name is known then: the rule's regex groups, ``[vars]``, the provider's
variables and the built-ins ``incoming`` and ``first_line``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from swarm.core.jsonfile import decode_json, decode_toml
from swarm.errors import NotFoundError, UsageError

On = Literal["prompt", "tool_result", "any", "summary"]
BUILTIN_NAMES = frozenset({"incoming", "first_line"})
"""Slots every template may use: the incoming text and its first line."""
DEFAULT_TEXT = 'Received: "{first_line}"'

_TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*|[0-9]+)\}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCall(_Strict):
    """One tool call the scripted model makes."""

    name: str = Field(min_length=1)
    input: dict[str, Any] = Field(default_factory=dict)


class Reply(_Strict):
    """What one model call answers: text, tool calls, or both."""

    text: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)

    @model_validator(mode="after")
    def _not_empty(self) -> Reply:
        if self.text is None and not self.tool_calls:
            raise ValueError("a reply needs text, tool_calls or both")
        return self


class Rule(_Strict):
    """When the incoming text matches, answer with one reply or a series of steps."""

    name: str = ""
    match: str = ""
    system: str = ""
    """A regex the system prompt must contain (e.g. a subagent definition's words); "" matches any."""
    on: On = "any"
    once: bool = False
    text: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    steps: list[Reply] = Field(default_factory=list)
    _pattern: re.Pattern[str] = PrivateAttr()
    _system: re.Pattern[str] = PrivateAttr()

    @field_validator("match", "system")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from exc
        return value

    @model_validator(mode="after")
    def _one_form(self) -> Rule:
        single = self.text is not None or bool(self.tool_calls)
        if single and self.steps:
            raise ValueError("give either text/tool_calls or steps, not both")
        if not single and not self.steps:
            raise ValueError("a rule needs text, tool_calls or steps")
        return self

    def model_post_init(self, context: Any) -> None:
        self._pattern = re.compile(self.match)
        self._system = re.compile(self.system)

    @property
    def pattern(self) -> re.Pattern[str]:
        return self._pattern

    def replies(self) -> list[Reply]:
        """The steps, or the single reply as a one-step list."""
        return self.steps or [Reply(text=self.text, tool_calls=self.tool_calls)]

    def accepts(self, kind: Literal["prompt", "tool_result", "summary"], system: str = "") -> bool:
        """Does the rule apply to this kind of message, for an agent with this system prompt?"""
        return self.on in ("any", kind) and self._system.search(system) is not None

    def group_names(self) -> set[str]:
        """Slots its regex provides: named groups and 0..n."""
        numbered = {str(i) for i in range(self._pattern.groups + 1)}
        return numbered | set(self._pattern.groupindex)


class DefaultReply(_Strict):
    """The answer when no rule matches."""

    text: str = Field(default=DEFAULT_TEXT, min_length=1)


class Playbook(_Strict):
    """A whole playbook file."""

    vars: dict[str, str] = Field(default_factory=dict)
    default: DefaultReply = Field(default_factory=DefaultReply)
    rules: list[Rule] = Field(default_factory=list)
    _source: str = PrivateAttr(default="<playbook>")

    @property
    def source(self) -> str:
        return self._source

    def check_slots(self, variables: Iterable[str] = ()) -> None:
        """Raise ``UsageError`` for a slot no value can ever fill."""
        common = BUILTIN_NAMES | set(self.vars) | set(variables)
        self._check("default.text", self.default.text, common)
        for index, rule in enumerate(self.rules):
            known = common | rule.group_names()
            for path, template in _rule_templates(index, rule):
                self._check(path, template, known)

    def _check(self, path: str, template: str, known: frozenset[str] | set[str]) -> None:
        unknown = sorted(slots(template) - known)
        if unknown:
            raise UsageError(
                f"playbook {self._source}: {path} uses unknown slot {{{unknown[0]}}} "
                f"(known: {', '.join(sorted(known))}); define it in [vars], or double the braces for literal text"
            )


def load_playbook(path: Path) -> Playbook:
    """Read and validate a ``.toml`` or ``.json`` playbook."""
    if not path.is_file():
        raise NotFoundError(f"playbook {path} does not exist; check the path")
    try:
        text = path.read_text(encoding="utf-8")
        data = decode_json(text) if path.suffix.lower() == ".json" else decode_toml(text)
    except ValueError as exc:  # not UTF-8, not JSON (nesting too deep included), not TOML
        raise UsageError(f"playbook {path} does not parse: {exc}; fix the syntax") from exc
    return parse_playbook(data, source=str(path))


def parse_playbook(data: Any, *, source: str = "<playbook>") -> Playbook:
    """Validate already-parsed playbook data; errors name ``source`` and the field."""
    try:
        playbook = Playbook.model_validate(data)
    except ValidationError as exc:
        raise UsageError(_describe(exc, source)) from exc
    playbook._source = source
    return playbook


def render(template: str, values: Mapping[str, str]) -> str:
    """Fill ``{name}`` / ``{0}`` from ``values``; ``{{``/``}}`` become braces; unknown names stay."""

    def fill(token: re.Match[str]) -> str:
        whole = token.group(0)
        if whole in ("{{", "}}"):
            return whole[0]
        return values.get(token.group(1), whole)

    return _TOKEN.sub(fill, template)


def render_value(value: Any, values: Mapping[str, str]) -> Any:
    """``render`` applied to every string inside dicts and lists (keys unchanged)."""
    if isinstance(value, str):
        return render(value, values)
    if isinstance(value, dict):
        return {key: render_value(item, values) for key, item in value.items()}
    if isinstance(value, list):
        return [render_value(item, values) for item in value]
    return value


def slots(template: str) -> set[str]:
    """The slot names in ``template`` (escaped braces excluded)."""
    return {m.group(1) for m in _TOKEN.finditer(template) if m.group(1) is not None}


def _rule_templates(index: int, rule: Rule) -> Iterator[tuple[str, str]]:
    """(path, template) for every templated string of a rule."""
    base = f"rules[{index}]"
    if rule.steps:
        for step_index, step in enumerate(rule.steps):
            yield from _reply_templates(f"{base}.steps[{step_index}]", step)
    else:
        yield from _reply_templates(base, Reply(text=rule.text, tool_calls=rule.tool_calls))


def _reply_templates(base: str, reply: Reply) -> Iterator[tuple[str, str]]:
    if reply.text is not None:
        yield f"{base}.text", reply.text
    for call_index, call in enumerate(reply.tool_calls):
        yield from _value_templates(f"{base}.tool_calls[{call_index}].input", call.input)


def _value_templates(path: str, value: Any) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _value_templates(f"{path}.{key}", item)
    elif isinstance(value, list):
        for item_index, item in enumerate(value):
            yield from _value_templates(f"{path}[{item_index}]", item)


def _describe(exc: ValidationError, source: str) -> str:
    errors = exc.errors()
    first = errors[0]
    where = _loc_path(first["loc"]) or "(top level)"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    reason = first["msg"].removeprefix("Value error, ")
    return f"playbook {source} is invalid: {where}: {reason}{more}; fix the file"


def _loc_path(loc: tuple[int | str, ...]) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path
