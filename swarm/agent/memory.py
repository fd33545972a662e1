"""Agent memory: a directory a definition with ``memory:`` keeps notes in across runs.

Scopes (Claude Code's, so existing memories are found):

    user     <claude_config_dir>/agent-memory/<name>/          every project; not in any repository
    project  <project root>/.claude/agent-memory/<name>/       shared through version control
    local    <project root>/.claude/agent-memory-local/<name>/ this project on this machine only

The project root is the repository's top (the cwd outside a repository).
``MEMORY.md`` in that directory is the index: ``memory_prompt`` puts the
start of it (``MEMORY_LINES`` lines, ``MEMORY_BYTES`` bytes) into the
system prompt, with the rules for keeping it. The agent writes there with
Write/Edit without asking: wherever a definition is applied (``swarm run
--agent``, a teammate's ``--agent-type``, a subagent) its write roots come
from ``with_memory``. Nothing here creates the directory — Write makes
missing parents.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from pathlib import Path

from swarm.agent.config_files import claude_config_dir, project_root
from swarm.agent.definitions import AgentDefinition
from swarm.core.fileio import read_regular

log = logging.getLogger(__name__)

INDEX = "MEMORY.md"
MEMORY_LINES = 200
MEMORY_BYTES = 25 * 1024
MEMORY_SECTION = """# Persistent agent memory
You have a persistent memory directory at {directory}/ that outlives this conversation.
Use it to build up knowledge that makes your future runs better:
- {index} there is your index; its first {lines} lines are shown to you at the start of every run,
  so keep it short and put details in other files of that directory, linked from it.
- Record what you learn that will help next time: where things live, conventions, recurring problems
  and their fixes, the user's preferences. Do not record what only this one task needs.
- Organize it by topic, not by date; update or remove a memory that turned out wrong or outdated.
- Write and edit these files with the Write and Edit tools; you need no permission for this directory.
- {scope_note}

## {index}
{content}"""
_SCOPE_NOTES = {
    "user": "This memory is user-scope: keep what you learn general, since it applies across all projects.",
    "project": "This memory is project-scope and shared with the team through version control: "
               "tailor it to this project.",
    "local": "This memory is local-scope (not checked into version control): "
             "tailor it to this project and this machine.",
}


def memory_dir(definition: AgentDefinition, cwd: Path, *, env: Mapping[str, str]) -> Path | None:
    """Where ``definition`` keeps its memory for an agent in ``cwd``; None if it has none."""
    folder = re.sub(r"[^A-Za-z0-9_-]", "-", definition.name)  # a path component, whatever the name
    if definition.memory == "user":
        return claude_config_dir(env) / "agent-memory" / folder
    if definition.memory == "project":
        return project_root(cwd) / ".claude" / "agent-memory" / folder
    if definition.memory == "local":
        return project_root(cwd) / ".claude" / "agent-memory-local" / folder
    return None


def with_memory(roots: list[Path] | None, definition: AgentDefinition | None, cwd: Path, *,
                env: Mapping[str, str]) -> list[Path] | None:
    """``roots`` plus the memory directory of ``definition`` (if any); None (anywhere) stays None."""
    directory = memory_dir(definition, cwd, env=env) if definition is not None else None
    return roots if roots is None or directory is None else [*roots, directory]


def memory_prompt(definition: AgentDefinition, cwd: Path, *, env: Mapping[str, str]) -> str:
    """The system prompt's memory section: where the memory is, how to keep it, and ``MEMORY.md`` now.

    "" for a definition without ``memory``.
    """
    directory = memory_dir(definition, cwd, env=env)
    if directory is None or definition.memory is None:
        return ""
    return MEMORY_SECTION.format(directory=directory, index=INDEX, lines=MEMORY_LINES,
                                 scope_note=_SCOPE_NOTES[definition.memory],
                                 content=_index_text(directory / INDEX))


def _index_text(path: Path) -> str:
    """The start of ``MEMORY.md`` (capped, the cut announced), or a line saying it is empty."""
    try:
        read = read_regular(path)
    except OSError as exc:
        log.warning("could not read the agent memory index", extra={"path": str(path), "reason": str(exc)})
        return f"(could not read {path}: {exc.strerror or exc})"
    text = read[0].decode("utf-8", errors="replace").strip() if read is not None else ""
    if not text:
        return f"Your {INDEX} is empty. When you learn something worth keeping, save it there."
    lines = text[:MEMORY_BYTES].splitlines()
    shown = "\n".join(lines[:MEMORY_LINES])
    if len(lines) > MEMORY_LINES or len(text) > MEMORY_BYTES:
        shown += (f"\n\n[{INDEX} is longer than {MEMORY_LINES} lines or {MEMORY_BYTES // 1024} KB; only its start "
                  "is shown. Move details into other files and keep the index short.]")
    return shown
