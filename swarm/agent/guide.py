"""The guide's system prompt: swarm's README as reference, and the person's configuration as it is now.

The built-in ``swarm-guide`` (``swarm.agent.builtin_agents``) is the only
agent whose prompt is built when it starts (seed 000, "Claude Code Guide"),
so that "how do I set up X?" is answered knowing what is already set up:
the agent definitions and skills that apply in its cwd, the team files there,
the settings files with their keys, the hook events settings name and the
MCP servers ``.mcp.json`` names. Hooks and MCP servers are read as raw JSON
keys here (``configured_hooks``, ``configured_mcp_servers``) until their
own owners can say more. Project files count only in a trusted folder, as
everywhere else (``swarm.agent.trust``).

The README comes from the checkout the package runs from when there is one
(the file may be newer than the install), else from the installed package's
metadata: ``pyproject.toml``'s ``readme`` makes it the long description, so a
plain ``pip install`` carries it too.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from swarm.agent.config_files import claude_config_dir
from swarm.agent.definitions import load_agents
from swarm.agent.permissions.paths import SETTINGS_FILES
from swarm.agent.skills import load_skills
from swarm.agent.trust import is_trusted
from swarm.core.jsonfile import decode_json, decode_toml

MOST = 40
"""Entries listed per kind; the rest are counted."""
MCP_FILE = ".mcp.json"
PACKAGE = "swarm"


def guide_prompt(body: str, cwd: Path, env: Mapping[str, str]) -> str:
    """The guide's prompt: its definition's ``body``, the person's configuration, then the README."""
    return "\n\n".join((body.strip(), configuration(cwd, env), readme_section()))


def configuration(cwd: Path, env: Mapping[str, str]) -> str:
    """What is set up for an agent in ``cwd``, one section per kind (names and paths, never file bodies)."""
    trusted = is_trusted(cwd, env)
    agents = [d for d in (load_agents(cwd, env=env).definitions.values()) if not d.builtin]
    skills = list(load_skills(cwd, env=env).skills.values())
    user = claude_config_dir(env)
    settings = [user / "settings.json", *([cwd / name for name in SETTINGS_FILES] if trusted else [])]
    found = {path: data for path in settings if (data := _json(path)) is not None}
    mcp = _json(cwd / MCP_FILE) if trusted else None
    parts = [f"# The person's configuration (now, for {cwd})",
             "" if trusted else "This folder is not trusted (`swarm trust`): its project files do not apply yet.",
             _listed("Agent definitions (besides the built-ins)",
                     [f"{d.name} ({d.source}{', ' + str(d.path) if d.path else ''}): {_one_line(d.description)}"
                      for d in agents]),
             _listed("Skills", [f"{s.name} ({s.source}, {s.path}): {_one_line(s.description)}" for s in skills]),
             _listed("Team files", [str(p) for p in team_files(cwd)] if trusted else []),
             _listed("Settings files", [f"{p}: keys {', '.join(sorted(d)) or '(none)'}" for p, d in found.items()]),
             _listed("Hook events in settings", configured_hooks(found.values())),
             _listed(f"MCP servers in {MCP_FILE}", configured_mcp_servers(mcp))]
    return "\n\n".join(p for p in parts if p)


def configured_hooks(settings: Any) -> list[str]:
    """The hook events the settings documents name (``{"hooks": {"PreToolUse": [...]}}``), each once."""
    events: dict[str, None] = {}
    for data in settings:
        hooks = data.get("hooks") if isinstance(data, dict) else None
        if isinstance(hooks, dict):
            events.update(dict.fromkeys(str(k) for k in hooks))
    return list(events)


def configured_mcp_servers(mcp: Any) -> list[str]:
    """The server names an ``.mcp.json`` document declares (``{"mcpServers": {"name": {...}}}``)."""
    servers = mcp.get("mcpServers") if isinstance(mcp, dict) else None
    return [str(name) for name in servers] if isinstance(servers, dict) else []


def team_files(cwd: Path) -> list[Path]:
    """TOML files in ``cwd`` and two levels below that have a ``[team]`` table (``swarm up``'s team files)."""
    found: list[Path] = []
    for pattern in ("*.toml", "*/*.toml", "*/*/*.toml"):
        for path in sorted(cwd.glob(pattern)):
            if len(found) >= MOST or any(part.startswith(".") for part in path.relative_to(cwd).parts):
                continue
            try:
                data = decode_toml(path.read_text(encoding="utf-8", errors="replace"))
            except (OSError, ValueError):  # any TOML file of a cloned repository
                continue
            if isinstance(data.get("team"), dict):
                found.append(path)
    return found


def readme_section(checkout: Path | None = None) -> str:
    """swarm's README as the guide's reference: its outline and path in a checkout (``checkout``, default the
    directory above the package), else its whole text from the installed package's metadata."""
    path = (checkout or Path(__file__).resolve().parents[2]) / "README.md"
    text = _read(path)
    if text is not None and text.startswith(f"# {PACKAGE}"):
        outline = [line for line in text.splitlines() if line.startswith("## ")]
        return (f"# swarm's README\nThe README is {path}; read the sections you need with Read (offset and "
                "limit for a part). Its sections:\n" + "\n".join(outline))
    try:
        installed = metadata.metadata(PACKAGE).json.get("description")
    except metadata.PackageNotFoundError:
        installed = None
    if isinstance(installed, str) and installed.strip():
        return f"# swarm's README (from the installed package)\n{installed.strip()}"
    return "# swarm's README\n(not found: neither beside the package nor in its metadata; answer from the configuration)"


def _listed(title: str, items: list[str]) -> str:
    shown = items[:MOST] + ([f"... and {len(items) - MOST} more"] if len(items) > MOST else [])
    return f"## {title}\n" + ("\n".join(f"- {item}" for item in shown) if shown else "(none)")


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= 160 else flat[:157] + "..."


def _json(path: Path) -> dict[str, Any] | None:
    text = _read(path)
    if text is None:
        return None
    try:
        data = decode_json(text)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
