"""Paths that matter to permissions: the agent's roots, and the protected files.

- Containment in the agent's roots is ``walking.within_roots`` (one check,
  used by the policy to decide and by ``ToolContext.check_writable`` to refuse).
- ``PROTECTED`` is the one list of files that change what an agent may do
  once written: settings files that grant rules (``SETTINGS_FILES``, read by
  ``settings.py``), skills (their ``allowed-tools`` become granted rules),
  slash commands, agent definitions (their ``permissionMode`` is applied to
  subagents), ``.claude/CLAUDE.md``, and everything under ``.git`` (its
  config and hooks make git run commands: ``core.fsmonitor`` runs at the next
  ``git status``). A pattern matches at any depth (``sub/.claude/skills/x``
  too: skills and agents are looked up in every directory from the
  repository root down). The policy never lets a rule or a mode allow a
  write to one (``is_protected``), nor a Bash command that may touch one
  (``may_touch_protected``: it names one, has a glob or a symlink that
  could reach one, or writes git's config with ``git config`` / ``git init
  --template`` / ``git clone -c``); only ``bypassPermissions`` or the lead
  does.
- ``read_target`` is the directory or file a read-only tool call looks at.
- ``anchored`` is a call's input with its paths made absolute in the
  directory the call runs in: what a permission request records and the
  policy matches rules against, so no later reader resolves a relative path
  against a different directory (a subagent's cwd is not its teammate's).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from swarm.agent.permissions.shell_syntax import ShellCommand
from swarm.agent.tool_api.walking import MAGIC, glob_regex, split_base

SETTINGS_FILES = (".claude/settings.json", ".claude/settings.local.json", ".swarm/settings.json")
"""Settings files (relative to a cwd) whose ``permissions`` grant rules; the one list swarm reads."""
PROTECTED = (
    ".claude/settings*.json", ".swarm/settings.json", ".claude/CLAUDE.md",
    ".claude/skills/**", ".swarm/skills/**", ".claude/commands/**", ".claude/agents/**", ".swarm/agents/**",
    ".git/**", ".mcp.json",
)
"""Path patterns (``/**``: the directory and everything under it) that a write is never auto-allowed to."""
_PATTERNS = tuple((tuple(glob_regex(part.casefold()) for part in p.removesuffix("/**").split("/")),
                   p.endswith("/**")) for p in PROTECTED)
_DIRS = frozenset(p.split("/")[0] for p in PROTECTED)
PATH_FIELDS = {"Read": "file_path", "Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path",
               "NotebookEdit": "notebook_path", "Glob": "path", "Grep": "path"}
"""The input field that names a path, for every file tool a request may name (Claude Code teammates' too)."""
_SEARCHES = frozenset({"Glob", "Grep"})
"""Tools whose path defaults to the cwd when left out."""
_GIT_CONFIG_READS = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l",
                               "--get-color", "--get-colorbool", "get", "list"})
_GIT_CONFIG_WRITING = frozenset({"-c", "--config", "--template", "--separate-git-dir", "-u", "--upload-pack"})
"""Options of ``git init`` / ``git clone`` that put config or hooks into the new ``.git``."""
_GIT_ARGUMENT_OPTIONS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env"})
_MENTION = re.compile(r"\.claude|\.swarm|\.mcp\.json|settings(?:\.local)?\.json|(?<![\w.-])\.git(?![\w.-])")
"""Text that names a protected directory or file (``.gitignore`` and ``x.git`` do not count)."""


def absolute(value: str, cwd: Path) -> Path:
    """``value`` (``~`` expanded, relative to ``cwd``) made absolute, symlinks and ``..`` resolved."""
    path = Path(value).expanduser()
    return (path if path.is_absolute() else cwd / path).resolve()


def anchored(tool: str, args: dict[str, Any], cwd: Path) -> dict[str, Any]:
    """``args`` with the tool's path made absolute in ``cwd`` as the tool would (``~`` expanded, ``..`` and symlinks
    kept: they mean what the kernel makes of them, which ``absolute`` shows).

    A search without a path gets ``cwd`` itself, which is where it searches.
    Other tools' input is returned as it is.
    """
    field = PATH_FIELDS.get(tool)
    value = args.get(field) if field else None
    if field is None or (value is None and tool not in _SEARCHES) or (value is not None and not isinstance(value, str)):
        return args
    path = Path(value or ".").expanduser()
    return {**args, field: str(path if path.is_absolute() else cwd / path)}


def names_relative_path(tool: str, args: dict[str, Any]) -> bool:
    """Does the call name a path that means nothing without knowing its cwd (relative, or a search's default)?"""
    field = PATH_FIELDS.get(tool)
    if field is None:
        return False
    value = args.get(field)
    if value is None:
        return tool in _SEARCHES
    return not isinstance(value, str) or not Path(value).expanduser().is_absolute()


def is_protected(value: str, cwd: Path) -> bool:
    """Would writing ``value`` write a protected file (as named, or where a symlink leads)?"""
    path = Path(value).expanduser()
    named = path if path.is_absolute() else cwd / path
    return any(_matches_protected(p.parts) for p in (named, absolute(value, cwd)))


def _matches_protected(parts: tuple[str, ...]) -> bool:
    folded = [p.casefold() for p in parts]
    for components, tree in _PATTERNS:
        k = len(components)
        for start in range(len(folded) - k + 1):
            if (tree or start + k == len(folded)) and all(
                    rx.match(name) for rx, name in zip(components, folded[start:start + k], strict=True)):
                return True
    return False


def may_touch_protected(command: ShellCommand, cwd: Path) -> bool:
    """Might the command touch a protected file: named in its text, reached by a glob or a symlink,
    git's config written by git itself, or a command that cannot be parsed?"""
    if not command.parsed:
        return True
    texts = [command.text, *command.words]
    if any(_MENTION.search(text.casefold()) for text in texts):
        return True
    if any(_writes_git_config(part.words) for part in (*command.commands, *command.maybe) if part.name == "git"):
        return True
    return any(_glob_reaches_protected(word) if MAGIC.search(word) else _leads_to_protected(word, cwd)
               for word in command.words)


def _leads_to_protected(word: str, cwd: Path) -> bool:
    """Does the word, or the path after an ``=`` in it, resolve (through symlinks) to a protected path?"""
    for value in {word, word.partition("=")[2]} - {""}:
        try:
            real = absolute(value, cwd)
        except (OSError, RuntimeError, ValueError):  # a loop, a NUL, a name too long: cannot tell
            return True
        if _matches_protected(real.parts) or real.name.casefold() in _DIRS:
            return True
    return False


def _writes_git_config(words: tuple[str, ...]) -> bool:
    """``git config`` (other than reading it), ``git init`` / ``git clone`` given config, a template or a hook."""
    args = list(words[1:])
    while args and args[0].startswith("-"):  # git's own options, before the subcommand
        option = args.pop(0)
        if option in _GIT_ARGUMENT_OPTIONS and args:
            args.pop(0)
    if not args:
        return False
    subcommand, rest = args[0], set(args[1:])
    if subcommand == "config":  # a read: --get/--list/get/list, or one name and no option at all
        return not (rest & _GIT_CONFIG_READS or (len(rest) == 1 and not args[1].startswith("-")))
    if subcommand in ("init", "clone"):
        return any(a.partition("=")[0] in _GIT_CONFIG_WRITING or a.startswith(("-c", "-u")) for a in rest)
    return False


def _glob_reaches_protected(word: str) -> bool:
    """A glob component that could name a protected directory.

    As the shell globs, ``*`` skips dot names, so only a component that starts
    with a dot, or has braces (expanded before globbing), can reach one.
    """
    parts = [p for p in word.split("/") if p.startswith(".") or "{" in p]
    return any(glob_regex(part.casefold()).match(name) for part in parts for name in _DIRS)


def read_target(tool: str, args: dict[str, Any], cwd: Path) -> Path | None:
    """What a read-only file tool looks at (Read: the file, Grep: its path, Glob: the pattern's base); None for others."""
    if tool == "Read":
        return absolute(str(args.get("file_path", "")), cwd)
    if tool in ("Grep", "Glob"):
        root = absolute(str(args.get("path") or "."), cwd)
        if tool == "Glob":
            root, _ = split_base(str(args.get("pattern", "")), root)
        return root.resolve()
    return None
