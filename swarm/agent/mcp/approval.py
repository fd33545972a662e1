"""Which MCP servers a cwd declares, and whether a project server (``.mcp.json``) may start there.

A project's ``.mcp.json`` is code from the repository: its servers are
commands swarm would run. So a project server starts only when

1. the folder is trusted (``swarm.agent.trust``) and owned by the user;
2. the ``.mcp.json`` that declares it is the file the team recorded when it
   first spawned a teammate in that cwd (``swarm.agent.permissions.settings``
   records its digest beside the settings files'): one written or changed
   later — by a teammate, say — declares nothing that starts;
3. it is approved for the folder, with Claude Code's keys:
   ``enabledMcpjsonServers`` (names), ``enableAllProjectMcpServers`` (all),
   and ``disabledMcpjsonServers`` (names, always wins). They are read from
   the project's entry in Claude Code's config file
   (``projects[<path>]``), the user's settings (``~/.claude/settings.json``)
   and the cwd's settings files — but a settings file changed since the team
   recorded it only counts for ``disabledMcpjsonServers`` (it may restrict,
   never approve: the rule the allow rules follow).

``approve`` records an approval in the project's entry of Claude Code's
config file (its lock, atomically, every other key kept), so
``swarm mcp approve NAME`` works without a terminal and counts for Claude
Code too.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from swarm.agent.config_files import claude_config_dir, claude_json_path, owned_by_user, project_root
from swarm.agent.mcp.config import (
    Declared,
    claude_json,
    mcp_json_paths,
    parse_servers,
    project_entry,
    read_json_object,
)
from swarm.agent.permissions.paths import SETTINGS_FILES
from swarm.agent.trust import is_trusted, update_project_entry

ENABLED = "enabledMcpjsonServers"
DISABLED = "disabledMcpjsonServers"
ENABLE_ALL = "enableAllProjectMcpServers"
NEEDS_APPROVAL = "needs approval"


def declared_servers(cwd: Path, env: Mapping[str, str], recorded: Mapping[str, str] | None) -> Declared:
    """Every server declared for ``cwd`` (user < project < local), project ones marked when they may not start.

    ``recorded``: the digests the team recorded for ``cwd`` (``settings_digests``); None: take the files as
    they are now (a process with no team: ``swarm run``, ``swarm mcp list``).
    """
    found = Declared()
    config, where = claude_json(env), str(claude_json_path(env))
    parse_servers(config.get("mcpServers"), scope="user", source=where, env=env, into=found)
    _project_servers(cwd, env, recorded, config, found)
    local = project_entry(config, cwd)
    parse_servers(local.get("mcpServers"), scope="local", source=f"{where} (this project)", env=env, into=found)
    return found


def digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return "absent"
    except OSError as exc:
        return f"unreadable: {exc.strerror}"


def _project_servers(cwd: Path, env: Mapping[str, str], recorded: Mapping[str, str] | None,
                     config: Mapping[str, Any], found: Declared) -> None:
    paths = [p for p in mcp_json_paths(cwd) if p.is_file()]
    if not paths:
        return
    trusted = owned_by_user(cwd) and is_trusted(cwd, env)
    approvals = _approvals(cwd, env, recorded, config) if trusted else None
    for path in paths:
        try:
            doc = read_json_object(path) or {}
        except ValueError as exc:
            found.warnings.append(f"{path}: {exc}; fix the file (a JSON object with mcpServers)")
            continue
        project = Declared()
        parse_servers(doc.get("mcpServers"), scope="project", source=str(path), env=env, into=project)
        found.warnings.extend(project.warnings)
        changed = recorded is not None and recorded.get(str(path)) != digest(path)
        for name, entry in project.servers.items():
            if approvals is None:
                why = "untrusted folder"
            elif changed:
                why = "changed since the team recorded it"
            else:
                why = approvals.verdict(name)
            found.servers[name] = replace(entry, approval=why)


class _Approvals:
    def __init__(self) -> None:
        self.enabled: set[str] = set()
        self.disabled: set[str] = set()
        self.all = False

    def add(self, values: Mapping[str, Any], *, may_approve: bool) -> None:
        self.disabled |= _names(values.get(DISABLED))
        if may_approve:
            self.enabled |= _names(values.get(ENABLED))
            self.all = self.all or values.get(ENABLE_ALL) is True

    def verdict(self, name: str) -> str:
        if name in self.disabled:
            return "disabled for this folder"
        return "" if self.all or name in self.enabled else NEEDS_APPROVAL


def _approvals(cwd: Path, env: Mapping[str, str], recorded: Mapping[str, str] | None,
               config: Mapping[str, Any]) -> _Approvals:
    approvals = _Approvals()
    approvals.add(project_entry(config, cwd), may_approve=True)
    approvals.add(_settings(claude_config_dir(env) / "settings.json"), may_approve=True)
    for name in SETTINGS_FILES:
        path = cwd.resolve() / name
        if not path.is_file():
            continue
        unchanged = recorded is None or recorded.get(str(path)) == digest(path)
        approvals.add(_settings(path), may_approve=unchanged)
    return approvals


def _settings(path: Path) -> dict[str, Any]:
    try:
        return read_json_object(path) or {}
    except (ValueError, json.JSONDecodeError):
        return {}


def _names(value: Any) -> set[str]:
    return {str(v) for v in value} if isinstance(value, list) else set()


def approve(cwd: Path, env: Mapping[str, str], name: str, *, enabled: bool = True) -> Path:
    """Approve (or, not ``enabled``, reject) the project server ``name`` for ``cwd``'s project; the file written."""
    def change(entry: dict[str, Any]) -> None:
        on, off = (ENABLED, DISABLED) if enabled else (DISABLED, ENABLED)
        entry[on] = sorted({*_names(entry.get(on)), name})
        entry[off] = sorted(_names(entry.get(off)) - {name})

    return update_project_entry(project_root(cwd), env, change)
