"""Hooks as real shell scripts, and an agent's hook set made from them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from swarm.agent.hooks.config import Source, parse_hooks
from swarm.agent.hooks.session import AgentHooks


def script(directory: Path, name: str, body: str) -> str:
    """An executable ``/bin/sh`` script ``name`` in ``directory`` running ``body``; its path, for a hook's command."""
    path = directory / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def hook_settings(**events: list[tuple[str, str, float | None]]) -> dict[str, Any]:
    """Claude Code's ``hooks`` value: ``PreToolUse=[("Bash", command, timeout)]``."""
    return {event: [{"matcher": matcher, "hooks": [{"type": "command", "command": command,
                                                     **({"timeout": timeout} if timeout else {})}]}
                    for matcher, command, timeout in groups]
            for event, groups in events.items()}


def agent_hooks(cwd: Path, doc: dict[str, Any], *, source: Source = "project", notes: list[str] | None = None,
                stop_event: str = "Stop") -> AgentHooks:
    found = parse_hooks(doc, source=source, origin="test settings")
    assert not found.warnings
    return AgentHooks(found, cwd=cwd, env=dict(os.environ), project_dir=cwd, stop_event=stop_event,
                      note=(notes.append if notes is not None else (lambda _: None)))
