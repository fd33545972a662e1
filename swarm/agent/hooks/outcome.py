"""What the hooks of one event decided, read from their exit codes and output (Claude Code's contract).

- exit 0: go on; stdout that is a JSON object may decide (below); plain
  stdout of ``UserPromptSubmit`` / ``SessionStart`` is context for the model;
- exit 2: block; stderr is the feedback (to the model for a tool call, the
  reason to keep working for ``Stop`` / ``SubagentStop`` / ``TeammateIdle`` /
  ``TaskCompleted``, why a prompt or a task was refused);
- any other exit, a timeout, a hook that cannot start: a non-blocking error,
  one note for the person and the log; the agent goes on.

JSON output: ``continue: false`` (+ ``stopReason``) stops the agent;
``decision: "block"`` (+ ``reason``) blocks; ``systemMessage`` is a note for
the person; ``hookSpecificOutput`` carries ``permissionDecision``
(allow/deny/ask) with ``permissionDecisionReason``, ``updatedInput`` and
``additionalContext`` (a ``PermissionRequest`` hook's ``decision.behavior``
allow/deny with ``message`` and ``updatedInput`` too).

Several hooks of one event: deny > ask > allow; any block blocks; contexts
and feedback add up; the first ``updatedInput`` wins.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from swarm.agent.hooks.runner import HookRun
from swarm.core.jsonfile import decode_json

Permission = Literal["allow", "deny", "ask"]
BLOCK_CODE = 2
PLAIN_CONTEXT_EVENTS = ("UserPromptSubmit", "SessionStart")
"""Events whose plain (non-JSON) stdout on exit 0 is context for the model."""
_RANK = {"allow": 0, "ask": 1, "deny": 2}


@dataclass
class HookOutcome:
    """The hooks' verdict on one event; the default is "nothing to say"."""

    blocked: bool = False
    feedback: list[str] = field(default_factory=list)
    """Why it was blocked, for the model (exit 2's stderr, a ``reason``)."""
    stop: bool = False
    """``continue: false``: the agent stops."""
    stop_reason: str = ""
    permission: Permission | None = None
    permission_reason: str = ""
    permission_trusted: bool = False
    """The ``allow`` came from a hook whose source may grant (a settings file, not a definition)."""
    updated_input: dict[str, Any] | None = None
    context: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """For the person: hooks that failed, ``systemMessage``s."""

    @property
    def reason(self) -> str:
        return "\n".join(t for t in self.feedback if t) or "blocked by a hook"

    @property
    def context_text(self) -> str:
        return "\n".join(t for t in self.context if t)


def interpret(event: str, runs: Sequence[HookRun]) -> HookOutcome:
    outcome = HookOutcome()
    for run in runs:
        _one(event, run, outcome)
    return outcome


def _one(event: str, run: HookRun, outcome: HookOutcome) -> None:
    label = f"{event} hook `{run.hook.command}`"
    if run.code is None:
        outcome.notes.append(f"{label} {run.failure}; going on without it")
        return
    if run.code == BLOCK_CODE:
        outcome.blocked = True
        outcome.feedback.append(run.stderr.strip() or f"{label} blocked this (exit 2)")
        return
    if run.code != 0:
        first = run.stderr.strip().splitlines()[0] if run.stderr.strip() else "no error output"
        outcome.notes.append(f"{label} failed (exit {run.code}): {first}")
        return
    doc = _json(run.stdout)
    if doc is None:
        if event in PLAIN_CONTEXT_EVENTS and run.stdout.strip():
            outcome.context.append(run.stdout.strip())
        return
    _decide(doc, run, outcome)


def _decide(doc: dict[str, Any], run: HookRun, outcome: HookOutcome) -> None:
    if doc.get("continue") is False:
        outcome.stop = True
        outcome.stop_reason = outcome.stop_reason or str(doc.get("stopReason") or "stopped by a hook")
    if isinstance(doc.get("systemMessage"), str) and doc["systemMessage"]:
        outcome.notes.append(doc["systemMessage"])
    decision = doc.get("decision")
    if decision == "block":
        outcome.blocked = True
        outcome.feedback.append(str(doc.get("reason") or ""))
    elif decision == "approve":  # the older PreToolUse spelling of allow
        _permission(outcome, "allow", str(doc.get("reason") or ""), run)
    specific = doc.get("hookSpecificOutput")
    if not isinstance(specific, dict):
        return
    verdict = specific.get("permissionDecision")
    behavior = specific.get("decision")
    if isinstance(behavior, dict):  # PermissionRequest
        verdict = behavior.get("behavior")
        specific = {**specific, "permissionDecisionReason": behavior.get("message", ""),
                    "updatedInput": behavior.get("updatedInput")}
    if verdict in _RANK:
        _permission(outcome, verdict, str(specific.get("permissionDecisionReason") or ""), run)
    if isinstance(specific.get("updatedInput"), dict) and outcome.updated_input is None:
        outcome.updated_input = specific["updatedInput"]
    if isinstance(specific.get("additionalContext"), str) and specific["additionalContext"]:
        outcome.context.append(specific["additionalContext"])


def _permission(outcome: HookOutcome, verdict: Permission, reason: str, run: HookRun) -> None:
    if outcome.permission is not None and _RANK[outcome.permission] > _RANK[verdict]:
        return
    if verdict == "allow":  # every hook that allowed must be one whose source may grant
        first = outcome.permission is None
        outcome.permission_trusted = (first or outcome.permission_trusted) and run.hook.source != "agent"
    outcome.permission = verdict
    outcome.permission_reason = reason or outcome.permission_reason
    if verdict == "deny":
        outcome.feedback.append(reason)


def _json(stdout: str) -> dict[str, Any] | None:
    text = stdout.strip()
    if not text.startswith("{"):
        return None
    try:
        doc = decode_json(text)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None
