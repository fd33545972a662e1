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

A memory directory grants writes only where it really is: in its place under
the project root (or the config directory), no symlink on the way from there
leading elsewhere (``memory_dir_in_place``). A repository that ships
``.claude/agent-memory/<name> -> DIR`` grants nothing under ``DIR``: the
directory is left out of the write roots, its index is not read, and the
prompt says why.
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


LEFT_OUT = """# Persistent agent memory
Your memory directory {directory}/ is not available in this run: {why}.
Do not write there; tell the person, who can replace it with a real directory."""


def _place(definition: AgentDefinition, cwd: Path, env: Mapping[str, str]) -> tuple[Path, Path] | None:
    """Where ``definition``'s memory is granted for (the project root or the config dir) and the directory itself."""
    folder = re.sub(r"[^A-Za-z0-9_-]", "-", definition.name)  # a path component, whatever the name
    if definition.memory == "user":
        base = claude_config_dir(env)
        return base, base / "agent-memory" / folder
    if definition.memory in ("project", "local"):
        base = project_root(cwd)
        return base, base / ".claude" / ("agent-memory" if definition.memory == "project" else "agent-memory-local") / folder
    return None


def memory_dir(definition: AgentDefinition, cwd: Path, *, env: Mapping[str, str]) -> Path | None:
    """Where ``definition`` keeps its memory for an agent in ``cwd``; None if it has none."""
    place = _place(definition, cwd, env)
    return place[1] if place is not None else None


def memory_dir_in_place(definition: AgentDefinition, cwd: Path, *, env: Mapping[str, str]) -> str:
    """"" when the memory directory is where it is granted for; else why not (a symlink leads it out, a loop)."""
    place = _place(definition, cwd, env)
    if place is None:
        return ""
    base, directory = place
    try:
        real, meant = directory.resolve(), base.resolve() / directory.relative_to(base)
    except (OSError, RuntimeError) as exc:
        return f"it cannot be resolved ({exc})"
    return "" if real == meant else f"a symlink leads it out of {base} to {real}"


def with_memory(roots: list[Path] | None, definition: AgentDefinition | None, cwd: Path, *,
                env: Mapping[str, str]) -> list[Path] | None:
    """``roots`` plus the memory directory of ``definition`` (if any, and in its place); None (anywhere) stays None."""
    directory = memory_dir(definition, cwd, env=env) if definition is not None else None
    if roots is None or directory is None or definition is None:
        return roots
    why = memory_dir_in_place(definition, cwd, env=env)
    if why:
        log.warning("the agent memory directory grants no writes", extra={"path": str(directory), "reason": why})
        return roots
    return [*roots, directory]


def memory_prompt(definition: AgentDefinition, cwd: Path, *, env: Mapping[str, str]) -> str:
    """The system prompt's memory section: where the memory is, how to keep it, and ``MEMORY.md`` now.

    "" for a definition without ``memory``.
    """
    directory = memory_dir(definition, cwd, env=env)
    if directory is None or definition.memory is None:
        return ""
    why = memory_dir_in_place(definition, cwd, env=env)
    if why:
        return LEFT_OUT.format(directory=directory, why=why)
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
