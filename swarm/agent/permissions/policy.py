"""The decision for one tool call: allow, deny (with a reason) or ask the lead.

Order: deny rules > the mode's refusals (plan; Write/Edit outside the roots)
> the sandbox (a Bash call that runs in it with ``autoAllowBashIfSandboxed``
runs unless an ask rule matches; one asking to leave it where that is not
allowed is refused) > read-only calls inside the roots > ask rules > protected paths > allow
rules > the mode's defaults. ``rule_decision`` is that rule step on its own,
the one place rules decide: ``decide`` uses it for a teammate's own rules and
the lead's desk for the lead policy (``runtime/permission_desk.py``).

Paths are judged where the call really runs (``CallFacts.cwd``: a
subagent's own cwd), and a rule's relative path pattern where its rules were
written (``CallFacts.rules_cwd``: the teammate's cwd, not a directory its
subagent was sent to): an allow rule covers a path only from there, a deny
or ask rule holds from there and from the call's cwd.

The roots are the agent's cwd or worktree (``CallFacts.write_roots``). In
every mode but ``bypassPermissions``, Write/Edit outside them are denied
without asking, and reads outside them (Read, Grep, Glob) ask unless an allow
rule covers them. Files that change what an agent may do or make git run
commands (``paths.PROTECTED``: settings, skills, commands, agent
definitions, ``.git``) are protected: Write/Edit/NotebookEdit of one, or a
Bash command that may touch one (``paths.may_touch_protected``) or cannot be
parsed, asks even under an allow rule or acceptEdits; only
``bypassPermissions`` (or the lead) lets it through.

A deny rule that a Bash command only *might* run (``bash_match.could_run``
says ``maybe``: a shell reading a script swarm cannot see, an unknown
wrapper, a script inside an argument) asks instead of denying, in every
mode, ``bypassPermissions`` included (``dontAsk`` denies it).

Modes:
- ``default``: read-only tools and edits inside the roots run; anything else asks.
- ``acceptEdits``: like default, plus simple file commands (mkdir, touch, cp, mv) run
  when swarm understands every word of them (``file_commands``) and every path is inside the roots.
- ``plan``: only read-only tools, as in default (outside the roots they ask),
  until a plan is approved (ExitPlanMode); everything else is refused.
- ``bypassPermissions``: everything runs except what a deny rule refuses
  (an ask rule still asks).
- ``dontAsk``: like default, but what would ask is denied instead.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from swarm.agent.permissions.file_commands import paths_of
from swarm.agent.permissions.paths import (
    anchored,
    is_protected,
    may_touch_protected,
    read_target,
)
from swarm.agent.permissions.bash_match import Match
from swarm.agent.permissions.rules import Rule, allow_cover
from swarm.agent.permissions.shell_syntax import parse_command
from swarm.agent.tool_api.walking import within_roots

Verdict = Literal["allow", "deny", "ask"]
PERMISSION_MODES = ("default", "acceptEdits", "plan", "bypassPermissions", "dontAsk")
"""Every permission mode an agent can run in (see the module docstring)."""
MODE_WIDTH = {"plan": 0, "dontAsk": 1, "default": 2, "acceptEdits": 3, "bypassPermissions": 4}
"""How much each mode lets run without asking, narrowest first: what ``wider_than`` and ``narrowest`` compare."""


def wider_than(mode: str, limit: str) -> bool:
    """Whether ``mode`` lets more run unasked than ``limit`` (permissions only narrow: such a mode is refused)."""
    return MODE_WIDTH[mode] > MODE_WIDTH[limit]


def narrowest(*modes: str) -> str:
    """The mode of ``modes`` that lets the least run unasked."""
    return min(modes, key=MODE_WIDTH.__getitem__)
WRITE_TOOLS = ("Write", "Edit")
"""swarm's file-writing tools: confined to the roots outside bypassPermissions."""
_WRITE_PATHS = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}
"""Every file-writing tool a request may name (Claude Code teammates' too), with its path field."""
PLAN_TOOLS = ("ExitPlanMode",)


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
    """What decided: ``rule:<text>``, ``mode:<mode>``, ``read-only``, ``outside-cwd``, ``protected``."""
    reason: str = ""


@dataclass(frozen=True)
class CallFacts:
    tool: str
    args: dict[str, Any]
    read_only: bool
    cwd: Path
    """The directory the call runs in: its relative paths mean paths there."""
    write_roots: Sequence[Path] | None = field(default=None)
    rules_cwd: Path | None = None
    """Where the rules' relative path patterns are anchored (the directory they were written for); None: ``cwd``."""
    sandboxed: bool = False
    """A Bash call that runs in the OS sandbox with ``autoAllowBashIfSandboxed`` (``Sandbox.auto_allowed``): it
    needs no prompt unless a deny or ask rule says otherwise."""
    sandbox_refusal: str = ""
    """Why the sandbox refuses this call outright (``dangerouslyDisableSandbox`` where it is not allowed)."""


def decide(call: CallFacts, mode: str, rules: RuleSet) -> Decision:
    denied = _denied(call, rules)
    if denied is not None and denied.verdict == "deny":
        return denied
    if mode == "plan" and not call.read_only and call.tool not in PLAN_TOOLS:
        return Decision("deny", "mode:plan", "in plan mode only read-only tools run until the lead approves "
                        "your plan; submit it with ExitPlanMode")
    if denied is not None:  # a deny rule the call might break: asks even in bypassPermissions
        return _ask_or_deny(mode, denied.by, denied.reason)
    if call.sandbox_refusal:
        return Decision("deny", "sandbox", call.sandbox_refusal)
    if call.sandboxed and rule_decision(call, RuleSet(ask=rules.ask), protect=False) is None:
        return Decision("allow", "sandbox")
    if call.tool in PLAN_TOOLS or (call.read_only and (mode == "bypassPermissions" or _reads_inside(call))):
        return Decision("allow", "read-only")
    if mode != "bypassPermissions" and call.tool in WRITE_TOOLS and not _inside(call):
        return Decision("deny", "outside-cwd", f"{call.args.get('file_path')} is outside your working directory "
                        f"({call.cwd}); writes there are not allowed in {mode} mode")
    decision = rule_decision(call, RuleSet(allow=rules.allow, ask=rules.ask), protect=mode != "bypassPermissions")
    if decision is not None:
        return _ask_or_deny(mode, decision.by, decision.reason) if decision.verdict == "ask" else decision
    return _mode_default(call, mode)


def rule_decision(call: CallFacts, rules: RuleSet, *, protect: bool = True) -> Decision | None:
    """What the rules alone say: deny > ask > protected path (asks) > allow; None when no rule applies.

    ``protect`` (off only in bypassPermissions) makes a write to a protected
    file, or a Bash command that may touch one or cannot be parsed, ask
    whatever the allow rules say. A deny rule that the call only might break
    asks (``_denied``).
    """
    denied = _denied(call, rules)
    if denied is not None:
        return denied
    args = anchored(call.tool, call.args, call.cwd)
    for rule in rules.ask:
        if any(rule.matches(call.tool, args, base, allow=False) for base in _bases(call)):
            return Decision("ask", f"rule:{rule.text}")
    if protect and _protected(call):
        return Decision("ask", "protected", "the call may change a protected file (settings, skills, commands, "
                        "agent definitions, .git) that grants permissions or runs commands")
    covering = allow_cover(rules.allow, call.tool, args, call.rules_cwd or call.cwd)
    if covering:
        return Decision("allow", "rule:" + " + ".join(r.text for r in covering))
    return None


def _denied(call: CallFacts, rules: RuleSet) -> Decision | None:
    """Deny when a deny rule matches; ask when the call only might run what one denies."""
    doubt = None
    args = anchored(call.tool, call.args, call.cwd)
    for rule in rules.deny:
        match = _strongest(rule.could_match(call.tool, args, base) for base in _bases(call))
        if match == "yes":
            return Decision("deny", f"rule:{rule.text}", f"denied by rule {rule.text}")
        if match == "maybe" and doubt is None:
            doubt = Decision("ask", f"rule:{rule.text}", f"the command might run what rule {rule.text} denies "
                             "(a script or wrapper swarm cannot see into)")
    return doubt


def _bases(call: CallFacts) -> list[Path]:
    """Where a deny or ask rule's relative pattern is read: where it was written, and where the call runs."""
    return [call.cwd] if call.rules_cwd is None or call.rules_cwd == call.cwd else [call.rules_cwd, call.cwd]


def _strongest(matches: Iterable[Match]) -> Match:
    found: Match = "no"
    for match in matches:
        if match == "yes":
            return match
        if match == "maybe":
            found = match
    return found


def _mode_default(call: CallFacts, mode: str) -> Decision:
    if mode == "bypassPermissions":
        return Decision("allow", "mode:bypassPermissions")
    if call.tool in WRITE_TOOLS and not _protected(call):
        return Decision("allow", f"mode:{mode}")
    if mode == "acceptEdits" and call.tool == "Bash" and _simple_file_command(call):
        return Decision("allow", "mode:acceptEdits")
    return _ask_or_deny(mode, f"mode:{mode}")


def _ask_or_deny(mode: str, by: str, reason: str = "") -> Decision:
    if mode == "dontAsk":
        return Decision("deny", "mode:dontAsk", "this call needs approval and the agent runs in dontAsk mode"
                        + (f": {reason}" if reason else ""))
    return Decision("ask", by, reason)


def _roots(call: CallFacts) -> list[Path]:
    return list(call.write_roots) if call.write_roots is not None else [call.cwd]


def _inside(call: CallFacts) -> bool:
    raw = Path(str(call.args.get("file_path", ""))).expanduser()
    return within_roots(raw if raw.is_absolute() else call.cwd / raw, _roots(call))


def _reads_inside(call: CallFacts) -> bool:
    target = read_target(call.tool, call.args, call.cwd)
    return target is None or within_roots(target, _roots(call))


def _protected(call: CallFacts) -> bool:
    if call.tool in _WRITE_PATHS:
        return is_protected(str(call.args.get(_WRITE_PATHS[call.tool], "")), call.cwd)
    if call.tool == "Bash":
        return may_touch_protected(parse_command(str(call.args.get("command", ""))), call.cwd)
    return False


def _simple_file_command(call: CallFacts) -> bool:
    """One mkdir/touch/cp/mv whose every word swarm understands, every path inside the roots, no hazard."""
    parsed = parse_command(str(call.args.get("command", "")))
    if not parsed.plain or len(parsed.commands) != 1:
        return False
    named = paths_of(parsed.commands[0])
    if named is None:
        return False
    paths = [Path(w).expanduser() for w in named]
    return all(within_roots(p if p.is_absolute() else call.cwd / p, _roots(call)) for p in paths)
