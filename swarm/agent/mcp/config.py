"""MCP server configuration in Claude Code's formats: where servers are declared, and what each entry says.

Sources, later overriding earlier by name (Claude Code's precedence):

    user      ``mcpServers`` at the top of Claude Code's config file (``~/.claude.json``)
    project   ``.mcp.json`` (``{"mcpServers": {...}}``) in the directories from the repository root
              down to the cwd (nearer wins); only in a trusted folder, and each server only once
              approved for the folder (``swarm.agent.mcp.approval``)
    local     ``projects[<absolute path>].mcpServers`` in Claude Code's config file, for the cwd or
              its project root
    agent     a definition's frontmatter ``mcpServers:`` entry ``{name: config}`` (inline)

An entry is ``{"command", "args", "env", "cwd"}`` (stdio; ``"type": "stdio"`` optional),
``{"type": "http", "url", "headers"}`` (streamable HTTP) or ``{"type": "sse", "url", "headers"}``.
``${VAR}`` and ``${VAR:-default}`` are expanded in command, args, env, url and headers from the
process environment; a variable that is unset and has no default makes the entry unusable, with
a one-line reason (it is listed, never started).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from swarm.agent.config_files import claude_json_path, directories_down_to, owned_by_user, project_root
from swarm.core.fileio import read_regular
from swarm.core.jsonfile import decode_json

Scope = Literal["user", "project", "local", "agent"]
Transport = Literal["stdio", "http", "sse"]
MCP_JSON = ".mcp.json"
"""The project's MCP file, in a directory from the repository root down to the cwd."""
MCP_JSON_LIMIT = 256 * 1024
"""Bytes an ``.mcp.json`` may have."""
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


class ServerConfig(BaseModel):
    """One server as written (before ``${VAR}`` expansion); unknown keys are ignored (Claude Code adds some)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    type: Transport = "stdio"
    command: str = ""
    args: list[str] = []
    env: dict[str, str] = {}
    cwd: str | None = None
    url: str = ""
    headers: dict[str, str] = {}
    timeout: float | None = Field(None, gt=0)
    """Seconds a tool call may take (Claude Code: ``MCP_TOOL_TIMEOUT``); None: ``DEFAULT_CALL_TIMEOUT``."""

    def expanded(self, env: Mapping[str, str]) -> ServerConfig:
        """The entry with ``${VAR}`` / ``${VAR:-default}`` replaced; ValueError naming a missing variable."""
        def one(text: str) -> str:
            def sub(found: re.Match[str]) -> str:
                value = env.get(found.group(1))
                if value is None:
                    if found.group(2) is None:
                        raise ValueError(f"environment variable {found.group(1)} is not set; set it or write "
                                         f"${{{found.group(1)}:-default}}")
                    return found.group(2)
                return value
            return _VAR.sub(sub, text)

        return self.model_copy(update={
            "command": one(self.command), "args": [one(a) for a in self.args],
            "env": {k: one(v) for k, v in self.env.items()}, "url": one(self.url),
            "headers": {k: one(v) for k, v in self.headers.items()},
            "cwd": one(self.cwd) if self.cwd else None})

    def problem(self) -> str:
        """Why the entry cannot start ("" when it can)."""
        if self.type == "stdio" and not self.command:
            return "no command; give the server's command (and args)"
        if self.type in ("http", "sse") and not self.url.startswith(("http://", "https://")):
            return f"url {self.url!r} is not http(s); give the server's URL"
        return ""


@dataclass(frozen=True)
class ServerEntry:
    """A declared server: its name, where it was declared, and its (expanded) configuration."""

    name: str
    scope: Scope
    source: str
    """The file (or definition) it was read from."""
    config: ServerConfig
    problem: str = ""
    """Why it cannot start as written (a bad entry, a missing variable); "" when it can."""
    approval: str = ""
    """For a project server that may not start: why (``needs approval``, ``untrusted folder``, ...); "" otherwise."""

    @property
    def startable(self) -> bool:
        return not self.problem and not self.approval


@dataclass
class Declared:
    """Every server declared for a cwd, by name (later scopes replaced earlier ones), and warnings for the person."""

    servers: dict[str, ServerEntry] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def parse_servers(raw: Any, *, scope: Scope, source: str, env: Mapping[str, str], into: Declared) -> None:
    """Add the servers of an ``mcpServers`` object to ``into`` (replacing same-named ones); bad ones are warnings."""
    if raw is None:
        return
    if not isinstance(raw, dict):
        into.warnings.append(f"{source}: mcpServers is not an object; write {{\"name\": {{\"command\": ...}}}}")
        return
    for name, value in raw.items():
        entry = server_entry(str(name), value, scope=scope, source=source, env=env)
        if entry is None:
            into.warnings.append(f"{source}: MCP server name {name!r} is not usable; use 1-64 of A-Z a-z 0-9 _ . -")
            continue
        into.servers[entry.name] = entry


def server_entry(name: str, value: Any, *, scope: Scope, source: str, env: Mapping[str, str]) -> ServerEntry | None:
    """One entry as a ``ServerEntry`` (a bad one carries its ``problem``); None for an unusable name."""
    if not _NAME.match(name):
        return None
    try:
        config = ServerConfig.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "entry"
        return ServerEntry(name, scope, source, ServerConfig(), problem=f"{where}: {first['msg']}; fix the entry")
    try:
        config = config.expanded(env)
    except ValueError as exc:
        return ServerEntry(name, scope, source, config, problem=str(exc))
    return ServerEntry(name, scope, source, config, problem=config.problem())


def read_json_object(path: Path) -> dict[str, Any] | None:
    """A JSON object file (None when it is missing); ValueError when it is not one."""
    try:
        found = read_regular(path, limit=MCP_JSON_LIMIT)
    except OSError as exc:
        raise ValueError(f"cannot read it ({exc.strerror or exc})") from exc
    if found is None:
        return None
    if len(found[0]) > MCP_JSON_LIMIT:
        raise ValueError(f"larger than {MCP_JSON_LIMIT // 1024} KiB")
    doc = decode_json(found[0])
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    return doc


def claude_json(env: Mapping[str, str]) -> dict[str, Any]:
    """Claude Code's config file as an object ({} when missing or unreadable: it declares nothing then)."""
    try:
        return read_json_object(claude_json_path(env)) or {}
    except ValueError:
        return {}


def project_entry(config: Mapping[str, Any], cwd: Path) -> dict[str, Any]:
    """``projects[<path>]`` for ``cwd`` or its project root, the nearer first ({} when neither has one)."""
    projects = config.get("projects")
    if not isinstance(projects, dict):
        return {}
    for key in dict.fromkeys((str(cwd.resolve()), str(project_root(cwd)))):
        entry = projects.get(key)
        if isinstance(entry, dict):
            return entry
    return {}


def mcp_json_paths(cwd: Path) -> list[Path]:
    """Where ``.mcp.json`` files that apply in ``cwd`` may be, farthest first (nearer ones override)."""
    if not owned_by_user(cwd):
        return []
    return [d / MCP_JSON for d in directories_down_to(cwd)]


def inline_servers(entries: Sequence[str | dict[str, Any]], *, source: str,
                   env: Mapping[str, str]) -> tuple[list[str], Declared]:
    """A definition's ``mcpServers:``: the names it refers to, and its inline servers (scope ``agent``)."""
    names: list[str] = []
    inline = Declared()
    for item in entries:
        if isinstance(item, str):
            names.append(item)
            continue
        parse_servers(item, scope="agent", source=source, env=env, into=inline)
    return names, inline
