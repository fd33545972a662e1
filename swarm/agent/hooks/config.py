"""Which hooks an agent has: Claude Code's ``hooks`` settings format, read from its sources.

The format (a settings file's ``hooks`` key, a definition's frontmatter ``hooks:``)::

    {"PreToolUse": [{"matcher": "Edit|Write",
                     "hooks": [{"type": "command", "command": "./fmt.sh", "timeout": 30}]}]}

Sources, in Claude Code's order (hooks add up; none replaces another):

    user       <claude_config_dir>/settings.json
    project    .claude/settings.json, .swarm/settings.json in the agent's cwd
    local      .claude/settings.local.json in the agent's cwd
    agent      the definition the agent runs as (``hooks:``), for its lifetime only

Project and local hooks are code from the repository: they are read only in a
trusted folder the current user owns (``swarm.agent.trust``), and, like a
settings file's allow rules (``swarm.agent.permissions.settings``), only from a
file whose digest matches the one the lead recorded: a file written or changed
after the team first looked (by a teammate, say) runs no hook, and the
``changed`` callback hears of it. A hook entry swarm cannot read is one warning;
the file's other hooks still load. ``"disableAllHooks": true`` in a file that
counts turns every hook off, a definition's too (a changed file cannot: a
teammate must not be able to switch off a guard the person set).
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from swarm.agent.config_files import claude_config_dir, owned_by_user
from swarm.agent.permissions.paths import SETTINGS_FILES
from swarm.agent.trust import is_trusted
from swarm.core.jsonfile import decode_json

log = logging.getLogger(__name__)

HookEvent = Literal[
    "PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest", "UserPromptSubmit", "Stop",
    "SubagentStart", "SubagentStop", "SessionStart", "SessionEnd", "PreCompact", "Notification",
    "TeammateIdle", "TaskCreated", "TaskCompleted",
]
EVENTS: tuple[str, ...] = HookEvent.__args__  # type: ignore[attr-defined]
"""Every event swarm fires, with Claude Code's names."""
DEFAULT_TIMEOUT = 600.0
"""Seconds a command hook may run when its entry names no ``timeout`` (Claude Code's default)."""
Source = Literal["user", "project", "local", "agent"]


class CommandHook(BaseModel):
    """One ``{"type": "command", "command": ..., "timeout": ...}`` entry."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    type: Literal["command"] = "command"
    command: str = Field(min_length=1)
    timeout: float | None = Field(None, gt=0)


class MatcherGroup(BaseModel):
    """``{"matcher": "Edit|Write", "hooks": [...]}``: the hooks run for what the matcher matches."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    matcher: str = ""
    hooks: list[CommandHook]


@dataclass(frozen=True)
class Hook:
    """One active command hook, with where it came from."""

    event: str
    matcher: str
    command: str
    timeout: float
    source: Source
    origin: str
    """The file it was read from, or ``agent '<name>'`` for a definition's hook."""

    def matches(self, target: str | None) -> bool:
        """``*`` or empty matches everything; else a tool name, ``A|B``, or a regex matched against the whole name."""
        if self.matcher in ("", "*") or target is None:
            return True
        try:
            return re.fullmatch(self.matcher, target) is not None
        except re.error:
            return self.matcher == target

    def as_dict(self) -> dict[str, Any]:
        return {"event": self.event, "matcher": self.matcher, "command": self.command, "timeout": self.timeout,
                "source": self.source, "origin": self.origin}


@dataclass(frozen=True)
class HookSet:
    """The hooks an agent has, in the order they were read; ``warnings`` are entries that could not be read."""

    hooks: tuple[Hook, ...] = ()
    warnings: tuple[str, ...] = field(default=())
    disabled: bool = False
    """A settings file that counts says ``"disableAllHooks": true``: no hook runs (a definition's neither)."""

    def for_event(self, event: str, target: str | None = None) -> list[Hook]:
        """The hooks of ``event`` whose matcher matches ``target`` (a tool name, a notification type...), each
        command once; none when hooks are disabled."""
        if self.disabled:
            return []
        found: dict[str, Hook] = {}
        for hook in self.hooks:
            if hook.event == event and hook.matches(target):
                found.setdefault(hook.command, hook)
        return list(found.values())

    def plus(self, other: HookSet) -> HookSet:
        return HookSet(self.hooks + other.hooks, self.warnings + other.warnings, self.disabled or other.disabled)

    def __bool__(self) -> bool:
        """Anything to keep: hooks, or the word that disables them (for the agent's children too)."""
        return bool(self.hooks) or self.disabled


def parse_hooks(doc: Any, *, source: Source, origin: str, stop_as: str = "Stop") -> HookSet:
    """The hooks in a ``hooks`` value; ``stop_as`` renames ``Stop`` (a subagent's definition: ``SubagentStop``)."""
    if doc is None:
        return HookSet()
    if not isinstance(doc, dict):
        return HookSet(warnings=(f"{origin}: hooks: expected an object of event names; fix or remove it",))
    hooks: list[Hook] = []
    warnings: list[str] = []
    for event, groups in doc.items():
        if event not in EVENTS:
            warnings.append(f"{origin}: hooks: {event!r} is not an event swarm fires; it was ignored")
            continue
        for index, raw in enumerate(groups if isinstance(groups, list) else [groups]):
            raw = _commands_only(_legacy(raw), f"{origin}: hooks.{event}[{index}]", warnings)
            try:
                group = MatcherGroup.model_validate(raw)
            except ValidationError as exc:
                err = exc.errors()[0]
                where = ".".join(str(p) for p in err["loc"])
                warnings.append(f"{origin}: hooks.{event}[{index}].{where}: {err['msg']}; fix or remove it")
                continue
            for entry in group.hooks:
                hooks.append(Hook(stop_as if event == "Stop" else event, group.matcher, entry.command,
                                  entry.timeout or DEFAULT_TIMEOUT, source, origin))
    return HookSet(tuple(hooks), tuple(warnings))


def _legacy(raw: Any) -> Any:
    """A frontmatter entry written flat (``- command: "echo hi"``, as in the seeds' example) is one hook."""
    if isinstance(raw, dict) and "hooks" not in raw and "command" in raw:
        return {"matcher": raw.get("matcher", ""), "hooks": [raw]}
    return raw


def _commands_only(raw: Any, where: str, warnings: list[str]) -> Any:
    """The group without hooks of a type swarm does not run yet (``prompt``, ``agent``, ``http``): one warning each."""
    if not isinstance(raw, dict) or not isinstance(raw.get("hooks"), list):
        return raw
    kept = []
    for entry in raw["hooks"]:
        kind = entry.get("type", "command") if isinstance(entry, dict) else "command"
        if kind == "command":
            kept.append(entry)
        else:
            warnings.append(f"{where}: a {kind!r} hook; swarm runs only 'command' hooks, so it was ignored")
    return {**raw, "hooks": kept}


def settings_hooks(cwd: Path, env: Mapping[str, str], recorded: Mapping[str, str] | None,
                   changed: Callable[[Path], None] | None = None) -> HookSet:
    """The hooks of the user's settings and of ``cwd``'s settings files (see the module docstring).

    ``recorded``: the digests the lead recorded (``TeamFile.settings_digests``); None: the files as they are
    now are the person's (a process's own agent, started by the person in that folder).
    """
    found = _file_hooks(claude_config_dir(env) / "settings.json", "user")
    project = [p for p in (cwd.resolve() / name for name in SETTINGS_FILES) if p.is_file()]
    if project and not (owned_by_user(cwd) and is_trusted(cwd, env)):
        log.info("untrusted folder: its settings files' hooks are not run", extra={"cwd": str(cwd)})
        return found
    for path in project:
        data = _read(path)
        if data is None:
            continue
        if recorded is not None and recorded.get(str(path)) != hashlib.sha256(data).hexdigest():
            if _has_hooks(data):
                log.warning("ignored the hooks of a settings file changed since the team recorded it",
                            extra={"path": str(path)})
                if changed is not None:
                    changed(path)
            continue
        found = found.plus(_hooks_of(path, data, "local" if path.name == "settings.local.json" else "project"))
    return found


def definition_hooks(definition: Any, *, subagent: bool) -> HookSet:
    """A definition's frontmatter ``hooks:`` (kept in its ``extra``); a subagent's ``Stop`` hooks are
    ``SubagentStop`` hooks, as in Claude Code."""
    extra = getattr(definition, "extra", None) or {}
    if "hooks" not in extra:
        return HookSet()
    return parse_hooks(extra["hooks"], source="agent", origin=f"agent '{definition.name}'",
                       stop_as="SubagentStop" if subagent else "Stop")


def _file_hooks(path: Path, source: Source) -> HookSet:
    data = _read(path)
    return HookSet() if data is None else _hooks_of(path, data, source)


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


def _has_hooks(data: bytes) -> bool:
    try:
        doc = decode_json(data)
    except ValueError:
        return False
    return isinstance(doc, dict) and bool(doc.get("hooks"))


def _hooks_of(path: Path, data: bytes, source: Source) -> HookSet:
    try:
        doc = decode_json(data)
    except ValueError as exc:
        return HookSet(warnings=(f"{path}: not JSON ({exc}); its hooks were ignored",))
    if not isinstance(doc, dict):
        return HookSet()
    found = parse_hooks(doc.get("hooks"), source=source, origin=str(path))
    return HookSet(found.hooks, found.warnings, disabled=doc.get("disableAllHooks") is True)

