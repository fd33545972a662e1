"""The context block every agent's conversation starts with: instructions, git status, today's date.

Claude Code's way, so projects that already have these files work unchanged.
The block is a user-turn text wrapped in ``<system-reminder>``, not part of
the system prompt, which stays byte-stable for prompt caching. It holds, in
this order:

0. who the agent is, when that is not in its system prompt (a teammate's
   name and team: ``introduction``);
1. instruction files, each introduced by its path (skipped with
   ``omit_instructions``, as Explore and Plan do):
   - ``<claude_config_dir>/CLAUDE.md`` (the user's instructions for every project);
   - for every directory from the repository root (the filesystem root
     outside a repository) down to the cwd: ``CLAUDE.md``,
     ``.claude/CLAUDE.md``, ``CLAUDE.local.md``, ``AGENTS.md`` — nearer
     directories later, so their word comes last; only in a trusted folder
     (``swarm.agent.trust``: Claude Code too reads them only after its trust
     dialog), never from a directory another user owns;
2. a git status snapshot when the cwd is in a repository: branch,
   ``git status --short`` (at most ``STATUS_LINES`` lines), the last
   ``RECENT_COMMITS`` commit subjects. git runs hardened (``HARDENED``):
   the repository's config is written by whoever works in it, and
   ``core.fsmonitor``, a filter driver, a hook or a pager named there would
   otherwise run at every agent's start, before any permission is asked;
   submodules are not entered (their config is theirs);
3. today's date.

A file that cannot be read is skipped (a log warning says why); a file over
``FILE_CAP`` bytes is cut there, and the text says so. The same files, repo
state and date give the same bytes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from datetime import date
from pathlib import Path

from swarm.agent.config_files import (
    claude_config_dir,
    directories_down_to,
    repository_root,
)
from swarm.agent.trust import is_trusted
from swarm.backends.git import git
from swarm.core.fileio import read_regular
from swarm.errors import BackendError

log = logging.getLogger(__name__)

FILE_CAP = 40 * 1024
"""Bytes of one instruction file that go into the block; the rest is cut (and the cut is announced)."""
STATUS_LINES = 20
RECENT_COMMITS = 3
PROJECT_FILES = (Path("CLAUDE.md"), Path(".claude") / "CLAUDE.md", Path("CLAUDE.local.md"), Path("AGENTS.md"))
"""Instruction files looked for in each directory from the repository root down to the cwd, in order."""

_PREAMBLE = ("Codebase and user instructions are shown below. Be sure to adhere to these instructions. "
             "IMPORTANT: These instructions OVERRIDE any default behavior and you MUST follow them exactly "
             "as written.")
_KINDS = {"CLAUDE.md": "project instructions, checked into the codebase",
          "CLAUDE.local.md": "user's private project instructions, not checked in",
          "AGENTS.md": "project instructions for coding agents"}
_CLOSING = ("IMPORTANT: this context may or may not be relevant to your task. Do not respond to it "
            "unless it is relevant to what you are doing.")


CONTEXT_OPENING = "<system-reminder>\nAs you answer, you can use the following context:\n"


def is_context_block(text: str) -> bool:
    """Is ``text`` a ``context_block`` (the first user message carries one)?"""
    return text.startswith(CONTEXT_OPENING)


def context_block(cwd: Path, *, env: Mapping[str, str], omit_instructions: bool = False,
                  today: date | None = None, introduction: str = "") -> str:
    """The ``<system-reminder>`` block for an agent working in ``cwd`` (see the module docstring).

    ``introduction`` opens the block: who this agent is (a teammate's name
    and team, ``AssembledAgent.introduction``), kept out of the system prompt
    so that prompt is shared; it survives compaction with the block.
    """
    here = cwd.resolve()
    sections = [introduction] if introduction else []
    if not omit_instructions:
        found = instruction_files(here, env=env)
        files = "\n\n".join(filter(None, (_file_section(path, kind) for path, kind in found)))
        if files:
            sections.append(f"# Instructions\n{_PREAMBLE}\n\n{files}")
    status = git_snapshot(here)
    if status:
        sections.append(f"# Git status\n{status}")
    sections.append(f"# Current date\nToday's date is {(today or date.today()).isoformat()}.")
    body = "\n\n".join(sections)
    return f"{CONTEXT_OPENING}{body}\n\n{_CLOSING}\n</system-reminder>"


def instruction_files(cwd: Path, *, env: Mapping[str, str]) -> list[tuple[Path, str]]:
    """The instruction files that exist for ``cwd``, in block order, each with what kind it is."""
    seen: set[Path] = set()
    found = []
    for path, kind in _candidates(cwd, env):
        real = path.resolve()
        if real in seen or not path.is_file():
            continue
        seen.add(real)
        found.append((path, kind))
    return found


def _candidates(cwd: Path, env: Mapping[str, str]) -> Iterator[tuple[Path, str]]:
    yield claude_config_dir(env) / "CLAUDE.md", "user's private global instructions for all projects"
    if not is_trusted(cwd, env):  # workspace trust: the project's instructions wait for it, as in Claude Code
        return
    for directory in directories_down_to(cwd):
        for name in PROJECT_FILES:
            yield directory / name, _KINDS.get(name.name, "project instructions")


def _file_section(path: Path, kind: str) -> str:
    text = _read_capped(path)
    return f"Contents of {path} ({kind}):\n\n{text}" if text is not None else ""


def _read_capped(path: Path) -> str | None:
    """The file's text, at most ``FILE_CAP`` bytes of it; None (and a log warning) if it cannot be read."""
    try:
        read = read_regular(path)
    except OSError as exc:
        log.warning("skipped an instruction file that cannot be read",
                    extra={"path": str(path), "reason": exc.strerror or str(exc)})
        return None
    if read is None:
        return None
    data = read[0]
    text = data[:FILE_CAP].decode("utf-8", errors="replace").rstrip()
    if len(data) > FILE_CAP:
        text += (f"\n\n[truncated: {path} is {len(data)} bytes; only the first {FILE_CAP // 1024} KB are shown. "
                 "Read the file for the rest.]")
    return text


HARDENED = ("--no-pager", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
            "-c", "log.showSignature=false")
"""git options that keep the repository's config from running commands during the snapshot;
``_no_filters`` adds one override per filter driver the config defines."""


def git_snapshot(cwd: Path) -> str:
    """Branch, short status (capped) and recent commit subjects of the repository at ``cwd``; "" outside one."""
    if repository_root(cwd) is None:
        return ""
    hardened = (*HARDENED, *_no_filters(cwd))
    branch = _git_or(cwd, "", *hardened, "branch", "--show-current").strip() or "(detached HEAD)"
    changes = _git_or(cwd, "", *hardened, "status", "--short", "--ignore-submodules=all").splitlines()
    shown = changes[:STATUS_LINES]
    if len(changes) > STATUS_LINES:
        shown.append(f"... and {len(changes) - STATUS_LINES} more (run git status to see them all)")
    commits = _git_or(cwd, "", *hardened, "log", f"-{RECENT_COMMITS}", "--format=%h %s").splitlines()
    return "\n".join([
        f"Current branch: {branch}",
        "Status:\n" + ("\n".join(shown) if shown else "(clean)"),
        "Recent commits:\n" + ("\n".join(commits) if commits else "(no commits yet)"),
    ])


def _no_filters(cwd: Path) -> list[str]:
    """``-c`` overrides that empty every filter driver the config defines (``status`` runs ``clean`` filters).

    Reading the config runs nothing; an empty command makes git leave the
    content as it is, and ``required=false`` keeps that from being an error.
    """
    names = _git_or(cwd, "", "config", "--name-only", "--get-regexp", r"^filter\.").splitlines()
    drivers = sorted({name.rsplit(".", 1)[0] for name in names if name.count(".") >= 2})
    return [arg for driver in drivers for key in ("clean=", "smudge=", "process=", "required=false")
            for arg in ("-c", f"{driver}.{key}")]


def _git_or(cwd: Path, fallback: str, *args: str) -> str:
    """git's stdout, or ``fallback`` when git refuses (e.g. ``log`` in a repository with no commits)."""
    try:
        return git(cwd, *args)
    except BackendError as exc:
        command = next((a for a in args if not a.startswith("-") and "=" not in a), args[0])
        log.debug("git question failed", extra={"git_command": command, "reason": str(exc)})
        return fallback
