"""Permission rules in Claude Code's syntax: ``Tool`` or ``Tool(specifier)``.

- ``Bash(git status:*)`` — a command that starts with ``git status``;
  ``Bash(npm test)`` — exactly that command. A compound command (``&&``,
  ``||``, ``;``, ``|``, newlines) is split: an allow rule must match every
  part, a deny rule matches if any part does; command substitution never
  matches an allow rule.
- ``Edit(src/**)``, ``Read(*.md)``, ``Write(//tmp/**)`` — gitignore-style
  globs on the file path, relative to the agent's cwd (``//`` absolute,
  ``~/`` home). ``Edit`` rules also cover ``Write``.
- ``Glob``/``Grep`` path specifiers match their ``path`` field.
- Any other ``Tool(x)`` matches when some string input value equals ``x``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swarm.errors import UsageError

_RULE = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)(?:\((.*)\))?$", re.DOTALL)
_SPLIT = re.compile(r"&&|\|\||;|\||\n")
_SUBSTITUTION = re.compile(r"\$\(|`|<\(|>\(")
SUBCOMMAND_PROGRAMS = frozenset({
    "git", "npm", "npx", "yarn", "pnpm", "cargo", "docker", "kubectl", "pip", "pip3", "go", "uv", "poetry",
    "gh", "make", "swarm", "bun", "deno", "dotnet", "mvn", "gradle",
})
"""Programs whose first argument is a subcommand: a suggested rule keeps it (``Bash(git push:*)``)."""
FILE_TOOLS = {"Read": "file_path", "Write": "file_path", "Edit": "file_path", "Glob": "path", "Grep": "path"}


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
        return self.tool == tool or (self.tool == "Edit" and tool == "Write")

    def matches(self, tool: str, args: dict[str, Any], cwd: Path, *, allow: bool) -> bool:
        """Does this rule apply to the call? ``allow`` selects the strict reading of compound commands."""
        if not self.covers_tool(tool):
            return False
        if self.content is None:
            return True
        if tool == "Bash":
            return _bash_matches(self.content, str(args.get("command", "")), allow=allow)
        if tool in FILE_TOOLS:
            value = args.get(FILE_TOOLS[tool]) or "."
            return _path_matches(self.content, str(value), cwd)
        return any(isinstance(v, str) and v == self.content for v in args.values())


def allow_cover(rules: Iterable[Rule], tool: str, args: dict[str, Any], cwd: Path) -> list[Rule]:
    """The allow rules that together permit the call, or [] if they do not.

    A compound Bash command is allowed when each of its parts is allowed by
    some rule (``git add -A && git commit -m x`` by ``Bash(git add:*)`` and
    ``Bash(git commit:*)``); command substitution is never allowed by a rule.
    """
    candidates = [r for r in rules if r.covers_tool(tool)]
    if tool != "Bash" or any(r.content is None for r in candidates):
        return next(([r] for r in candidates if r.matches(tool, args, cwd, allow=True)), [])
    command = str(args.get("command", ""))
    parts = [p.strip() for p in _SPLIT.split(command) if p.strip()]
    if not parts or _SUBSTITUTION.search(command):
        return []
    used: list[Rule] = []
    for part in parts:
        rule = next((r for r in candidates if r.content is not None and _one_command(r.content, part)), None)
        if rule is None:
            return []
        if rule not in used:
            used.append(rule)
    return used


def parse_rules(texts: list[str] | tuple[str, ...]) -> list[Rule]:
    return [Rule.parse(t) for t in texts]


def _bash_matches(spec: str, command: str, *, allow: bool) -> bool:
    parts = [p.strip() for p in _SPLIT.split(command) if p.strip()]
    if not parts:
        return False
    if allow and _SUBSTITUTION.search(command):
        return False
    test = all if allow else any
    return test(_one_command(spec, part) for part in parts)


def _one_command(spec: str, command: str) -> bool:
    if spec.endswith(":*"):
        prefix = spec[:-2].strip()
        return command == prefix or command.startswith(prefix + " ")
    if spec.endswith("*"):
        return command.startswith(spec[:-1])
    return command == spec.strip()


def _path_matches(pattern: str, value: str, cwd: Path) -> bool:
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
    return re.fullmatch(_glob_regex(glob), relative) is not None or (
        "/" not in glob and re.fullmatch(_glob_regex(glob), target.name) is not None)


def _glob_regex(glob: str) -> str:
    out, i = [], 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return "".join(out)


def suggest(tool: str, args: dict[str, Any], cwd: Path) -> list[str]:
    """Rules that would allow this call next time, most specific first."""
    if tool == "Bash":
        words = str(args.get("command", "")).split()
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
