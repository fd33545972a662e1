"""Workspace trust: whether a folder's project configuration may apply, recorded where Claude Code records it.

A folder's project configuration — agent definitions (``.claude/agents``,
``.swarm/agents``), skills and legacy commands, settings files, CLAUDE.md —
can change what an agent may do, and anyone who can write a repository (or
a shared directory) can plant it. So it applies only in a trusted folder, as
in Claude Code, which asks once per folder before any of it takes effect.

- **Where trust is recorded**: Claude Code's global config file
  (``swarm.agent.config_files.claude_json_path``:
  ``$CLAUDE_CONFIG_DIR/.claude.json``, else ``~/.claude.json``), as
  ``projects[<absolute path>].hasTrustDialogAccepted``, so trusting a folder
  in either tool counts for both. ``trust`` changes only that key, under the
  file's lock (Claude Code's lock directory too) and atomically; every other
  key stays as it was, and a file that does not parse is refused, never
  replaced.
- **What is trusted**: a folder recorded trusted, everything below it, and a
  linked git worktree of a trusted repository (swarm's teammates work in
  worktrees) — only one git itself registered: its ``.git`` file is not
  enough, git's own record in the repository must point back at it.
- **For one run** (``--trust``, or ``SWARM_TRUST=<folder>`` in the
  environment the loaders are given): that folder and everything below it,
  recorded nowhere. Teammates inherit the variable (``runtime.env`` forwards
  ``SWARM_*``), so a teammate working in the folder or a worktree of it is
  trusted and one working elsewhere is not.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from swarm.agent.config_files import claude_json_path
from swarm.backends.git import git
from swarm.core.document_codecs import ObjectCodec
from swarm.core.jsonfile import LockedJsonFile
from swarm.errors import BackendError, UsageError

TRUST_KEY = "hasTrustDialogAccepted"
"""The key Claude Code sets in ``projects[<path>]`` when the person trusts the folder."""
TRUST_VAR = "SWARM_TRUST"
"""A folder trusted for this run only (what ``--trust`` sets for the agents a command starts)."""


def _config_file(env: Mapping[str, str]) -> LockedJsonFile[dict[str, Any]]:
    """Claude Code's file: read and changed in its own format (2-space JSON), never moved aside."""
    return LockedJsonFile(claude_json_path(env), ObjectCodec(), indent=2, shared=True, quarantine=False)


def trusted_folders(env: Mapping[str, str]) -> list[str]:
    """The folders recorded trusted, as recorded (a file that cannot be read trusts none)."""
    projects = _config_file(env).read(quiet=True).get("projects")
    if not isinstance(projects, dict):
        return []
    return [str(Path(key)) for key, entry in projects.items()
            if isinstance(entry, dict) and entry.get(TRUST_KEY) is True and Path(key).is_absolute()]


def is_trusted(folder: Path, env: Mapping[str, str]) -> bool:
    """True if ``folder`` is trusted: recorded or granted for this run, itself or an ancestor, or the
    repository it is a linked worktree of (see the module docstring)."""
    here = folder.resolve()
    recorded = set(trusted_folders(env))
    granted = env.get(TRUST_VAR, "").strip()
    given = Path(granted).resolve() if granted and Path(granted).is_absolute() else None

    def covered(start: Path) -> bool:
        return any(str(p) in recorded or p == given for p in (start, *start.parents))

    if covered(here):
        return True
    if not recorded and given is None:
        return False
    main = main_checkout(here)
    return main is not None and covered(main)


def main_checkout(folder: Path) -> Path | None:
    """The main working tree of the repository whose linked worktree holds ``folder``; None otherwise.

    Only a worktree git registered counts: git keeps ``<common dir>/worktrees/<id>/gitdir`` naming
    the worktree's ``.git``, and that must be this worktree's (a planted ``.git`` file naming another
    repository's worktree does not make a folder that worktree).
    """
    try:
        lines = git(folder, "rev-parse", "--show-toplevel", "--git-dir", "--git-common-dir").splitlines()
    except BackendError:  # not a repository, or no git: no worktree either
        return None
    if len(lines) != 3:
        return None
    top, git_dir, common = Path(lines[0]).resolve(), (folder / lines[1]).resolve(), (folder / lines[2]).resolve()
    if git_dir == common or git_dir.parent != common / "worktrees" or common.name != ".git":
        return None
    try:
        registered = Path((git_dir / "gitdir").read_text(encoding="utf-8").strip()).resolve()
    except (OSError, UnicodeDecodeError):
        return None
    return common.parent if registered == top / ".git" else None


def trust(folder: Path, env: Mapping[str, str], *, accepted: bool = True) -> Path:
    """Record ``folder`` (resolved) as trusted — or, not ``accepted``, as not — and return the file written.

    UsageError when the file's ``projects`` (or the folder's entry) is not a JSON object;
    StorageError when the file does not parse: both leave it untouched.
    """
    def change(entry: dict[str, Any]) -> None:
        entry[TRUST_KEY] = accepted

    return update_project_entry(folder, env, change)


def update_project_entry(folder: Path, env: Mapping[str, str], change: Callable[[dict[str, Any]], None]) -> Path:
    """Apply ``change`` to ``projects[<folder, resolved>]`` of Claude Code's config file (created when missing),
    under its lock and atomically, every other key kept; the file written. Errors as ``trust``'s."""
    key = str(folder.resolve())
    file = _config_file(env)

    def update(config: dict[str, Any]) -> None:
        projects = config.setdefault("projects", {})
        entry = projects.setdefault(key, {}) if isinstance(projects, dict) else None
        if not isinstance(entry, dict):
            raise UsageError(f"{file.path}: projects[{key!r}] is not a JSON object; fix the file, then try again")
        change(entry)

    file.update(update)
    return file.path
