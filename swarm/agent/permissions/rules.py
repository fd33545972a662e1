"""Permission rules in Claude Code's syntax: ``Tool`` or ``Tool(specifier)``.

- ``Bash(git status:*)`` — a command whose words start with ``git status``;
  ``Bash(npm test)`` — exactly that command; ``Bash(ls*)`` — text starting
  with ``ls``. Commands are read with a shell parser (``shell_syntax``): an
  allow rule must match every simple command the shell would run, and
  vouches for nothing else (a redirection to a file, a substitution, a
  wrapper, text it cannot parse: the call asks). A deny or ask rule matches
  when any simple command — including those inside substitutions, subshells
  and wrappers — could be the one it names (``bash_match.could_run``: by
  program name, options skipped, a non-literal word as anything), and
  *might* match when the call runs a script swarm cannot see; the policy
  asks then instead of denying.
- ``Edit(src/**)``, ``Read(*.md)``, ``Write(//tmp/**)`` — globs on the file
  path (the same translation as the Glob tool: ``**``, ``*``, ``?``, ``[..]``,
  ``{a,b}``), relative to the agent's cwd (``//`` absolute, ``~/`` home); a
  pattern without ``/`` also matches the file name anywhere. ``Edit`` rules
  also cover ``Write``.
- ``Glob``/``Grep`` path specifiers match their ``path`` field.
- ``mcp__server`` and ``mcp__server__*`` cover every tool of that MCP server;
  ``mcp__server__tool`` one tool (``covers_server``).
- Any other ``Tool(x)`` matches when some string input value equals ``x``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swarm.agent.permissions.bash_match import (
    Match,
    Spec,
    allows,
    allows_all,
    could_run,
)
from swarm.agent.permissions.shell_syntax import parse_command
from swarm.agent.tool_api.walking import glob_regex
from swarm.errors import UsageError

_RULE = re.compile(r"^([A-Za-z][A-Za-z0-9_-]*(?:__\*)?)(?:\((.*)\))?$", re.DOTALL)
MCP_PREFIX = "mcp__"
SUBCOMMAND_PROGRAMS = frozenset({
    "git", "npm", "npx", "yarn", "pnpm", "cargo", "docker", "kubectl", "pip", "pip3", "go", "uv", "poetry",
    "gh", "make", "swarm", "bun", "deno", "dotnet", "mvn", "gradle",
})
"""Programs whose first argument is a subcommand: a suggested rule keeps it (``Bash(git push:*)``)."""
FILE_TOOLS = {"Read": "file_path", "Write": "file_path", "Edit": "file_path", "Glob": "path", "Grep": "path"}


def covers_server(name: str, tool: str) -> bool:
    """Whether the rule name ``name`` (``mcp__server`` or ``mcp__server__*``) covers the MCP tool ``tool``."""
    if not name.startswith(MCP_PREFIX) or not tool.startswith(MCP_PREFIX):
        return False
    server = name.removesuffix("__*")
    return "__" not in server[len(MCP_PREFIX):] and tool.startswith(server + "__")


@dataclass(frozen=True)
class Rule:
    tool: str
    content: str | None
    text: str

    @classmethod
    def parse(cls, text: str) -> Rule:
        found = _RULE.match(text.strip())
        if found is None or found.group(2) == "":
            raise UsageError(f"bad permission rule {text!r}; expected Tool or Tool(specifier), e.g. 'Bash(git status:*)'")
        return cls(tool=found.group(1), content=found.group(2), text=text.strip())

    def covers_tool(self, tool: str) -> bool:
        return self.tool == tool or (self.tool == "Edit" and tool == "Write") or covers_server(self.tool, tool)

    def matches(self, tool: str, args: dict[str, Any], cwd: Path, *, allow: bool) -> bool:
        """Does this rule apply to the call? ``allow`` selects the strict reading, else the conservative one."""
        if allow and tool == "Bash" and self.covers_tool(tool) and self.content is not None:
            return allows_all(self.content, parse_command(str(args.get("command", ""))))
        return self.could_match(tool, args, cwd) != "no"

    def could_match(self, tool: str, args: dict[str, Any], cwd: Path) -> Match:
        """The conservative reading, for deny and ask rules: ``maybe`` when a Bash command might run it."""
        if not self.covers_tool(tool):
            return "no"
        if self.content is None:
            return "yes"
        if tool == "Bash":
            return could_run(self.content, parse_command(str(args.get("command", ""))))
        if tool in FILE_TOOLS:
            value = args.get(FILE_TOOLS[tool]) or "."
            return "yes" if path_matches(self.content, str(value), cwd) else "no"
        return "yes" if any(isinstance(v, str) and v == self.content for v in args.values()) else "no"


def allow_cover(rules: Iterable[Rule], tool: str, args: dict[str, Any], cwd: Path) -> list[Rule]:
    """The allow rules that together permit the call, or [] if they do not.

    A compound Bash command is allowed when each of its simple commands is
    allowed by some rule (``git add -A && git commit -m x`` by ``Bash(git add:*)``
    and ``Bash(git commit:*)``) and it has no hazard (``shell_syntax``).
    """
    candidates = [r for r in rules if r.covers_tool(tool)]
    if tool != "Bash" or any(r.content is None for r in candidates):
        return next(([r] for r in candidates if r.matches(tool, args, cwd, allow=True)), [])
    command = parse_command(str(args.get("command", "")))
    if not command.plain:
        return []
    used: list[Rule] = []
    for part in command.commands:
        rule = next((r for r in candidates if r.content is not None and allows(Spec.of(r.content), part)), None)
        if rule is None:
            return []
        if rule not in used:
            used.append(rule)
    return used


def parse_rules(texts: list[str] | tuple[str, ...]) -> list[Rule]:
    return [Rule.parse(t) for t in texts]


def path_matches(pattern: str, value: str, cwd: Path) -> bool:
    """Does the file ``value`` (relative to ``cwd``) match a rule's path ``pattern``? Symlinks and ``..`` resolved."""
    target = Path(value).expanduser()
    target = (target if target.is_absolute() else cwd / target).resolve()
    if pattern.startswith("//"):
        base, glob = Path("/"), pattern[2:]
    elif pattern.startswith("~/"):
        base, glob = Path.home(), pattern[2:]
    else:
        base, glob = cwd.resolve(), pattern.lstrip("/")
    try:
        relative = target.relative_to(base.resolve()).as_posix()
    except ValueError:
        return False
    regex = glob_regex(glob)
    return regex.match(relative) is not None or ("/" not in glob and regex.match(target.name) is not None)


def suggest(tool: str, args: dict[str, Any], cwd: Path) -> list[str]:
    """Rules that would allow this call next time, most specific first."""
    if tool == "Bash":
        command = parse_command(str(args.get("command", "")))
        words = list(command.commands[0].words) if command.commands else str(args.get("command", "")).split()
        if not words:
            return ["Bash"]
        two = len(words) > 1 and words[0] in SUBCOMMAND_PROGRAMS and not words[1].startswith("-")
        return [f"Bash({' '.join(words[:2]) if two else words[0]}:*)"]
    if tool in ("Write", "Edit"):
        path = Path(str(args.get("file_path", ""))).expanduser()
        path = path if path.is_absolute() else cwd / path
        try:
            parent = path.parent.resolve().relative_to(cwd.resolve()).as_posix()
            return [f"Edit({parent}/**)" if parent != "." else "Edit(**)"]
        except ValueError:
            return [f"Edit(/{path.parent.resolve().as_posix()}/**)"]
    return [tool]


def as_update(rule: str) -> dict[str, Any]:
    """A rule as a permission update in Claude Code's ``addRules`` shape."""
    tool, _, rest = rule.partition("(")
    entry: dict[str, Any] = {"toolName": tool}
    if rest.endswith(")"):
        entry["ruleContent"] = rest[:-1]
    return {"type": "addRules", "rules": [entry], "behavior": "allow", "destination": "session"}


def rules_in(update: Any) -> list[str]:
    """Allow-rule strings carried by a permission update (``addRules`` shape, or plain strings)."""
    if isinstance(update, str):
        return [update]
    if not isinstance(update, dict) or update.get("behavior", "allow") != "allow":
        return []
    out = []
    for rule in update.get("rules", []):
        if isinstance(rule, dict) and rule.get("toolName"):
            content = rule.get("ruleContent")
            out.append(f"{rule['toolName']}({content})" if content else str(rule["toolName"]))
    return out
