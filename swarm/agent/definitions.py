"""Agent definitions: what kind of agent runs (prompt, tools, model, limits), and where they come from.

A definition is data; one ``run_agent`` runs every kind (DESIGN.md). Sources,
later overriding earlier by name:

    built-in   general-purpose, Explore, Plan, Verification, swarm-guide  (``swarm.agent.builtin_agents``;
               in coordinator mode the one ``worker`` instead)
    user       <claude_config_dir>/agents/*.md
    project    .claude/agents/*.md and .swarm/agents/*.md in every directory from the
               repository root (the filesystem root outside a repository) down to the
               cwd; nearer directories win, and in one directory .swarm over .claude. Only
               in a trusted folder (``swarm.agent.trust``), and never from a directory
               another user owns (``config_files.directories_down_to``)
    cli        ``--agents '{"name": {"description": ..., "prompt": ..., ...}}'``

A file is Markdown with YAML frontmatter (Claude Code's format, so existing
files work unchanged); the body is the agent's system prompt::

    ---
    name: reviewer                 # defaults to the file name without .md
    description: Reviews a diff for bugs; use after a change.
    tools: Read, Grep, Glob        # or a YAML list; absent or "*" = all tools
    model: sonnet                  # sonnet/opus/haiku, a model id, or inherit
    effort: high                   # low/medium/high/xhigh/max: how hard the model thinks
    ---
    You are a code reviewer...

A broken file costs one warning (``AgentCatalog.warnings``, one line:
``<path>: <field>: <what is wrong>; <what to do>``) and nothing else: the
other definitions still load. Unknown frontmatter keys are kept in ``extra``
and otherwise ignored. A broken ``--agents`` value is the user's command
line, so it is a ``UsageError`` instead.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from swarm.agent.builtin_agents import builtin_agents
from swarm.agent.config_files import (
    ConfigFileError,
    claude_config_dir,
    describe_field_error,
    directories_down_to,
    read_markdown,
    split_frontmatter,
    split_names,
)
from swarm.agent.permissions.policy import PERMISSION_MODES
from swarm.agent.definition_model import AgentDefinition, Source
from swarm.agent.trust import is_trusted
from swarm.core.names import validate_name
from swarm.errors import InvalidNameError, UsageError
from swarm.models.base import EFFORTS, Effort

log = logging.getLogger(__name__)

AGENT_DIRS = (Path(".claude") / "agents", Path(".swarm") / "agents")
"""Where a directory keeps definition files, in the order they are read (later wins on a clash)."""


@dataclass(frozen=True)
class AgentCatalog:
    """The active definitions by name, and one line per file that could not be loaded as written."""

    definitions: dict[str, AgentDefinition]
    warnings: list[str]

    def get(self, name: str) -> AgentDefinition | None:
        return self.definitions.get(name)

    def names(self) -> list[str]:
        return sorted(self.definitions, key=str.lower)


# -- the fields a file or --agents may set ---------------------------------------


def _names_list(value: Any) -> Any:
    """A YAML list stays; ``"Read, Grep"`` becomes ``["Read", "Grep"]``; None (``tools:``) means unset."""
    if isinstance(value, str):
        return split_names(value)
    return value


CLAUDE_CODE_REMINDER = "criticalSystemReminder_EXPERIMENTAL"


class _Fields(BaseModel):
    """The frontmatter of a definition file (and an ``--agents`` entry), with Claude Code's key names."""

    model_config = ConfigDict(extra="allow", strict=True, populate_by_name=True, frozen=True)

    name: str | None = None
    description: str
    tools: list[str] | None = None
    disallowed_tools: list[str] | None = Field(None, alias="disallowedTools")
    model: str | None = None
    permission_mode: str | None = Field(None, alias="permissionMode")
    max_turns: int | None = Field(None, alias="maxTurns", gt=0)
    effort: Effort | None = None
    background: bool = False
    isolation: Literal["worktree"] | None = None
    color: str | None = None
    memory: Literal["user", "project", "local"] | None = None
    skills: list[str] | None = None
    omit_claude_md: bool = Field(False, alias="omitClaudeMd")
    critical_system_reminder: str | None = Field(None, alias="criticalSystemReminder")
    mcp_servers: list[str | dict[str, dict[str, Any]]] | None = Field(None, alias="mcpServers")
    required_mcp_servers: list[str] | None = Field(None, alias="requiredMcpServers")

    _split = field_validator("tools", "disallowed_tools", "skills", "required_mcp_servers",
                             mode="before")(_names_list)

    @model_validator(mode="before")
    @classmethod
    def _claude_code_names(cls, data: Any) -> Any:
        """Claude Code's own key for the reminder, ``criticalSystemReminder_EXPERIMENTAL``, is read too."""
        if isinstance(data, dict) and CLAUDE_CODE_REMINDER in data and "criticalSystemReminder" not in data:
            data = {("criticalSystemReminder" if k == CLAUDE_CODE_REMINDER else k): v for k, v in data.items()}
        return data

    @field_validator("permission_mode")
    @classmethod
    def _known_mode(cls, value: str | None) -> str | None:
        if value is not None and value not in PERMISSION_MODES:
            raise ValueError(f"unknown permission mode {value!r}")
        return value

    @field_validator("name")
    @classmethod
    def _path_safe(cls, value: str | None) -> str | None:
        if value is not None and not _usable_name(value):
            raise ValueError(f"{value!r} cannot be an agent name")
        return value


def _usable_name(name: str) -> bool:
    try:
        validate_name(name, "agent name")
    except InvalidNameError:
        return False
    return True


_HINTS = {
    "name": "use 1-64 of A-Z a-z 0-9 _ - (or leave it out to use the file name)",
    "description": "add a one-line description of when to use this agent",
    "tools": "use a YAML list or a comma-separated string of tool names, e.g. Read, Grep, Bash",
    "disallowedTools": "use a YAML list or a comma-separated string of tool names",
    "skills": "use a YAML list or a comma-separated string of skill names",
    "model": "use sonnet, opus, haiku, fable, inherit or a model id",
    "permissionMode": f"use one of {', '.join(PERMISSION_MODES)}",
    "maxTurns": "use a whole number above 0",
    "effort": f"use {', '.join(EFFORTS[:-1])} or {EFFORTS[-1]}",
    "background": "use true or false",
    "omitClaudeMd": "use true or false",
    "mcpServers": "use a YAML list of server names or {name: {command: ..., args: [...]}} entries",
    "requiredMcpServers": "use a YAML list or a comma-separated string of MCP server names",
    "isolation": "use worktree or leave it out",
    "memory": "use user, project or local",
    "color": "use a color name such as blue",
    "criticalSystemReminder": "use one line of text (the rule repeated after every tool result)",
}
_ALIASES = {name: info.alias or name for name, info in _Fields.model_fields.items()}


def _field_error(exc: ValidationError) -> str:
    return describe_field_error(exc, aliases=_ALIASES, hints=_HINTS)


def _definition(fields: _Fields, *, name: str, prompt: str, source: Source, path: Path | None) -> AgentDefinition:
    return AgentDefinition(
        name=name, description=fields.description, prompt=prompt, tools=fields.tools,
        disallowed_tools=fields.disallowed_tools or [], model=fields.model, permission_mode=fields.permission_mode,
        max_turns=fields.max_turns, effort=fields.effort, background=fields.background, isolation=fields.isolation, color=fields.color,
        memory=fields.memory, skills=fields.skills or [], omit_claude_md=fields.omit_claude_md, source=source,
        critical_system_reminder=(fields.critical_system_reminder or "").strip(),
        mcp_servers=list(fields.mcp_servers or []), required_mcp_servers=fields.required_mcp_servers or [],
        path=path, extra=dict(fields.model_extra or {}),
    )


def parse_definition_file(path: Path, source: Source) -> AgentDefinition:
    """The definition in ``path``; ConfigFileError (``<field>: ...``) if it cannot be loaded."""
    data, body = split_frontmatter(read_markdown(path))
    try:
        fields = _Fields.model_validate(data)
        name = fields.name or validate_name(path.stem, "agent name")
    except ValidationError as exc:
        raise ConfigFileError(_field_error(exc)) from exc
    except InvalidNameError as exc:
        raise ConfigFileError(f"name: {exc}; rename the file or set name in the frontmatter") from exc
    return _definition(fields, name=name, prompt=body, source=source, path=path)


def _load_dir(directory: Path, source: Source, warnings: list[str]) -> Iterator[AgentDefinition]:
    """Every ``*.md`` in ``directory`` (sorted by name) that loads; a warning for each that does not."""
    try:
        files = sorted(p for p in directory.glob("*.md") if not p.name.startswith("."))
    except OSError as exc:
        warnings.append(f"{directory}: directory: cannot list it ({exc.strerror or exc}); check its mode")
        return
    for path in files:
        try:
            definition = parse_definition_file(path, source)
        except ConfigFileError as exc:
            warnings.append(f"{path}: {exc}")
            continue
        yield definition


def _project_agent_dirs(cwd: Path, user_dir: Path) -> list[Path]:
    """Project definition directories, farthest first; the user directory is never also a project one."""
    found = []
    for directory in directories_down_to(cwd):
        for sub in AGENT_DIRS:
            candidate = directory / sub
            if candidate.is_dir() and candidate.resolve() != user_dir.resolve():
                found.append(candidate)
    return found


# -- built-ins, --agents, and the merge ---------------------------------------------


def parse_cli_agents(text: str) -> list[AgentDefinition]:
    """Definitions from ``--agents`` JSON (``{"name": {"description": ..., "prompt": ..., ...}}``).

    UsageError, one line, for anything malformed: it is the user's own command line.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--agents: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
                         'use {"name": {"description": "...", "prompt": "..."}}') from exc
    except RecursionError as exc:
        raise UsageError('--agents: not valid JSON (nested too deep); use {"name": {"description": "...", '
                         '"prompt": "..."}}') from exc
    if not isinstance(data, dict):
        raise UsageError('--agents: expected a JSON object of name -> definition, e.g. '
                         '{"reviewer": {"description": "...", "prompt": "..."}}')
    return [_cli_definition(name, entry) for name, entry in data.items()]


def _cli_definition(name: str, entry: Any) -> AgentDefinition:
    if not isinstance(entry, dict):
        raise UsageError(f'--agents: {name}: expected an object such as {{"description": "...", "prompt": "..."}}')
    fields = {key: value for key, value in entry.items() if key != "prompt"}
    prompt = entry.get("prompt", "")
    try:
        validate_name(name, "agent name")
        if not isinstance(prompt, str):
            raise UsageError(f"--agents: {name}: prompt: expected a string; give the system prompt as text")
        parsed = _Fields.model_validate({**fields, "name": name})
    except InvalidNameError as exc:
        raise UsageError(f"--agents: {exc}") from exc
    except ValidationError as exc:
        raise UsageError(f"--agents: {name}: {_field_error(exc)}") from exc
    return _definition(parsed, name=name, prompt=prompt, source="cli", path=None)


def _merge(layers: list[list[AgentDefinition]]) -> dict[str, AgentDefinition]:
    """Later definitions replace earlier ones of the same name, remembering the source they replaced."""
    active: dict[str, AgentDefinition] = {}
    for layer in layers:
        for definition in layer:
            replaced = active.get(definition.name)
            if replaced is not None:
                definition = definition.model_copy(update={"overrides": replaced.source})
            active[definition.name] = definition
    return active


def load_agents(cwd: Path, *, env: Mapping[str, str], cli_json: str | None = None) -> AgentCatalog:
    """The active definitions for an agent in ``cwd`` (see the module docstring for the order).

    Broken files become ``warnings``; a malformed ``cli_json`` raises UsageError.
    """
    warnings: list[str] = []
    user_dir = claude_config_dir(env) / "agents"
    user = list(_load_dir(user_dir, "user", warnings)) if user_dir.is_dir() else []
    project_dirs = _project_agent_dirs(cwd, user_dir)
    if project_dirs and not is_trusted(cwd, env):  # workspace trust: the project's definitions wait for it
        log.debug("untrusted folder: project definitions ignored", extra={"cwd": str(cwd)})
        project_dirs = []
    project = [d for directory in project_dirs for d in _load_dir(directory, "project", warnings)]
    cli = parse_cli_agents(cli_json) if cli_json is not None else []
    for warning in warnings:
        log.debug("agent definition warning", extra={"warning": warning})
    return AgentCatalog(_merge([builtin_agents(env), user, project, cli]), warnings)
