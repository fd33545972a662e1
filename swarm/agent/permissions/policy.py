"""The decision for one tool call: allow, deny (with a reason) or ask the lead.

Order: deny rules > ask rules > allow rules > the mode's defaults. Read-only
tools need no approval. In every mode but ``bypassPermissions``, Write/Edit
outside the agent's write roots (its cwd or worktree) are denied without asking.

Modes:
- ``default``: reads and edits inside the cwd run; anything else asks.
- ``acceptEdits``: like default, plus simple file commands (mkdir, touch, cp, mv) run.
- ``plan``: read-only tools only, until a plan is approved (ExitPlanMode).
- ``bypassPermissions``: everything runs except what a deny rule refuses.
- ``dontAsk``: like default, but what would ask is denied instead.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from swarm.agent.permissions.rules import Rule, allow_cover

Verdict = Literal["allow", "deny", "ask"]
PERMISSION_MODES = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk")
"""Every permission mode an agent can run in (see the module docstring)."""
WRITE_TOOLS = ("Write", "Edit")
PLAN_TOOLS = ("ExitPlanMode",)
_FILE_COMMANDS = ("mkdir", "touch", "cp", "mv")


@dataclass(frozen=True)
class RuleSet:
    allow: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()
    ask: tuple[Rule, ...] = ()

    def merged(self, other: RuleSet) -> RuleSet:
        return RuleSet(self.allow + other.allow, self.deny + other.deny, self.ask + other.ask)


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    by: str
    """What decided: ``rule:<text>``, ``mode:<mode>``, ``read-only``, ``outside-cwd``."""
    reason: str = ""


@dataclass(frozen=True)
class CallFacts:
    tool: str
    args: dict[str, Any]
    read_only: bool
    cwd: Path
    write_roots: list[Path] | None = field(default=None)


def decide(call: CallFacts, mode: str, rules: RuleSet) -> Decision:
    for rule in rules.deny:
        if rule.matches(call.tool, call.args, call.cwd, allow=False):
            return Decision("deny", f"rule:{rule.text}", f"denied by rule {rule.text}")
    if mode == "plan" and not call.read_only and call.tool not in PLAN_TOOLS:
        return Decision("deny", "mode:plan", "in plan mode only read-only tools run until the lead approves "
                        "your plan; submit it with ExitPlanMode")
    if call.read_only or call.tool in PLAN_TOOLS:
        return Decision("allow", "read-only")
    if mode != "bypassPermissions" and call.tool in WRITE_TOOLS and _outside(call):
        return Decision("deny", "outside-cwd", f"{call.args.get('file_path')} is outside your working directory "
                        f"({call.cwd}); writes there are not allowed in {mode} mode")
    for rule in rules.ask:
        if rule.matches(call.tool, call.args, call.cwd, allow=False):
            return _ask_or_deny(mode, f"rule:{rule.text}")
    covering = allow_cover(rules.allow, call.tool, call.args, call.cwd)
    if covering:
        return Decision("allow", "rule:" + " + ".join(r.text for r in covering))
    return _mode_default(call, mode)


def _mode_default(call: CallFacts, mode: str) -> Decision:
    if mode == "bypassPermissions":
        return Decision("allow", "mode:bypassPermissions")
    if call.tool in WRITE_TOOLS:
        return Decision("allow", f"mode:{mode}")
    if mode == "acceptEdits" and call.tool == "Bash" and _simple_file_command(str(call.args.get("command", ""))):
        return Decision("allow", "mode:acceptEdits")
    return _ask_or_deny(mode, f"mode:{mode}")


def _ask_or_deny(mode: str, by: str) -> Decision:
    if mode == "dontAsk":
        return Decision("deny", "mode:dontAsk", "this call needs approval and the agent runs in dontAsk mode")
    return Decision("ask", by)


def _outside(call: CallFacts) -> bool:
    roots = call.write_roots if call.write_roots is not None else [call.cwd]
    raw = Path(str(call.args.get("file_path", ""))).expanduser()
    target = (raw if raw.is_absolute() else call.cwd / raw).resolve()
    return not any(target == r.resolve() or target.is_relative_to(r.resolve()) for r in roots)


def _simple_file_command(command: str) -> bool:
    words = command.split()
    return bool(words) and words[0] in _FILE_COMMANDS and not any(c in command for c in ";&|`$<>")
