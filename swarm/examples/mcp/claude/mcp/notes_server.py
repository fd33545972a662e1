"""A tiny stdio MCP server, written with the official ``mcp`` SDK: project notes kept in ``.notes.json``.

Tools: ``add_note(text)`` appends a note, ``list_notes()`` lists them. The file is in the folder the
server starts in (the agent's cwd) unless ``NOTES_FILE`` names another. Any MCP client runs it the same way
(Claude Code, swarm): ``python3 .claude/mcp/notes_server.py`` speaks MCP on stdin/stdout.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

try:  # the SDK's 2.x name; 1.x calls it FastMCP
    from mcp.server.mcpserver import MCPServer as Server
except ImportError:  # pragma: no cover - mcp 1.x
    from mcp.server.fastmcp import FastMCP as Server

server = Server("notes")
NOTES = Path(os.environ.get("NOTES_FILE") or ".notes.json")


def _notes() -> list[str]:
    try:
        found = json.loads(NOTES.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [str(n) for n in found] if isinstance(found, list) else []


@server.tool(description="Add a note to the project's notes. Returns its number.")
def add_note(text: str) -> str:
    notes = [*_notes(), text]
    partial = NOTES.with_name(NOTES.name + ".tmp")
    partial.write_text(json.dumps(notes, indent=2) + "\n", encoding="utf-8")
    partial.replace(NOTES)
    return f"saved note {len(notes)}"


@server.tool(description="List the project's notes, one a line, numbered.")
def list_notes() -> str:
    notes = _notes()
    return "\n".join(f"{i}. {n}" for i, n in enumerate(notes, 1)) if notes else "no notes yet"


if __name__ == "__main__":
    server.run()
