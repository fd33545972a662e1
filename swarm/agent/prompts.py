"""System prompts, built from facts about the agent (never from user text)."""

from __future__ import annotations

import platform
from pathlib import Path

BASE = """You are a software engineering agent working on a user's machine through tools.
Work in small verified steps: read before you edit, run what you change, and say plainly what you did.
Tool results are facts from the machine; a tool error tells you what to fix in your next call.
When the task is done, reply with a short final answer and no tool calls."""

TEAMMATE = """You are {name}, a member of team "{team}". The lead is "team-lead".
Messages from teammates arrive as <teammate-message teammate_id="..."> blocks.
To talk to someone, use the SendMessage tool; plain replies are only seen by the lead as your turn's result.
If you receive a shutdown_request, answer it with SendMessage and a structured shutdown_response
(approve unless you are in the middle of something that must finish, then give the reason)."""


def system_prompt(cwd: Path, *, name: str | None = None, team: str | None = None, extra: str = "") -> str:
    parts = [BASE, f"Working directory: {cwd}\nPlatform: {platform.system().lower()}"]
    if name and team:
        parts.append(TEAMMATE.format(name=name, team=team))
    if extra:
        parts.append(extra)
    return "\n\n".join(parts)
