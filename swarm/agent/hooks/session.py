"""An agent's hooks, ready to fire: the set it has, where they run, and the session they belong to.

``AgentHooks.fire(event, ...)`` builds the event's input (Claude Code's common
fields — ``session_id``, ``transcript_path``, ``cwd``, ``permission_mode``,
``hook_event_name`` — plus the event's own), runs the matching hooks
(``runner``) and returns what they decided (``outcome``). Each hook that
fails or times out is one log line, one transcript event (``hook_failed``)
and one note for the person. ``for_agent`` gives a subagent the same settings
hooks plus its definition's (``AssembledAgent.hooks``), for its lifetime
only: the child's object is dropped when it ends, the parent's never held them.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swarm.agent.hooks.config import HookSet, settings_hooks
from swarm.agent.hooks.outcome import HookOutcome, interpret
from swarm.agent.hooks.runner import run_hooks
from swarm.agent.transcript import Transcript

if TYPE_CHECKING:
    from swarm.agent.sandbox import Sandbox

log = logging.getLogger(__name__)


def _log_note(text: str) -> None:
    log.warning("%s", text)


@dataclass(frozen=True)
class AgentHooks:
    """The hooks one agent fires (an empty set fires nothing and costs nothing)."""

    hooks: HookSet
    cwd: Path
    env: Mapping[str, str]
    project_dir: Path
    """``CLAUDE_PROJECT_DIR``: the folder the session started in."""
    session_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    stop_event: str = "Stop"
    """The event that fires when this agent ends its turn: ``Stop``, or ``SubagentStop`` for a subagent."""
    note: Callable[[str], None] = _log_note
    """Where remarks for the person go (a hook that failed)."""
    agent: Mapping[str, str] = field(default_factory=dict)
    """Fields naming the agent in every input (``agent_id``, ``agent_type`` for a subagent)."""
    sandbox: Sandbox | None = None
    """The agent's Bash sandbox: its hooks run in it too (None: unsandboxed, as its Bash)."""
    roots: tuple[Path, ...] | None = None
    """The agent's write roots (what its sandboxed commands may write besides the cwd)."""

    def active(self, event: str, target: str | None = None) -> bool:
        return bool(self.hooks.for_event(event, target))

    def fire(self, event: str, *, target: str | None = None, transcript: Transcript | None = None,
             permission_mode: str | None = None, cwd: Path | None = None, **fields: Any) -> HookOutcome:
        """Run ``event``'s hooks matching ``target`` with ``fields`` in their input; nothing to run: no outcome."""
        hooks = self.hooks.for_event(event, target)
        if not hooks:
            return HookOutcome()
        where = cwd or self.cwd
        payload: dict[str, Any] = {
            "session_id": self.session_id, "transcript_path": str(transcript.path) if transcript else "",
            "cwd": str(where), "permission_mode": permission_mode or "default", "hook_event_name": event,
            **self.agent, **fields}
        runs = run_hooks(hooks, payload, cwd=where, env=self.env, project_dir=self.project_dir,
                         sandbox=self.sandbox, roots=self.roots)
        outcome = interpret(event, runs)
        for run in runs:
            if run.code is None and transcript is not None:
                transcript.event("hook_failed", hook_event=event, command=run.hook.command, why=run.failure)
        for text in outcome.notes:
            self.note(text)
        if transcript is not None and (outcome.blocked or outcome.stop):
            transcript.event("hook_decided", hook_event=event, blocked=outcome.blocked, stop=outcome.stop,
                             reason=outcome.reason if outcome.blocked else outcome.stop_reason)
        return outcome

    def for_agent(self, extra: HookSet, *, subagent: bool, cwd: Path | None = None, agent_id: str | None = None,
                  agent_type: str | None = None, roots: Sequence[Path] | None = None) -> AgentHooks:
        """The hooks a child agent fires: these plus ``extra`` (its definition's), in its own cwd and write
        ``roots`` (in the same sandbox); a subagent's turn ends with ``SubagentStop`` and its inputs name it
        (``agent_id``, ``agent_type``)."""
        agent = dict(self.agent)
        if subagent and agent_id is not None:
            agent.update(agent_id=agent_id, agent_type=agent_type or "general-purpose")
        return replace(self, hooks=self.hooks.plus(extra), cwd=cwd or self.cwd,
                       roots=tuple(roots) if roots is not None else self.roots if cwd is None else None,
                       stop_event="SubagentStop" if subagent else self.stop_event, agent=agent)

def load_agent_hooks(cwd: Path, env: Mapping[str, str], *, recorded: Mapping[str, str] | None,
                     extra: HookSet = HookSet(), changed: Callable[[Path], None] | None = None,
                     note: Callable[[str], None] = _log_note, session_id: str | None = None,
                     sandbox: Sandbox | None = None, roots: Sequence[Path] | None = None) -> AgentHooks | None:
    """A process's own agent's hooks: the settings files' (``config.settings_hooks``; ``recorded`` as there) and
    ``extra`` (its definition's); each entry that cannot be read is one note. None: it has none. With the agent's
    ``sandbox`` they run in it, with its write ``roots``."""
    found = settings_hooks(cwd, env, recorded, changed)
    for warning in found.warnings:
        note(warning)
    hooks = HookSet(found.hooks, disabled=found.disabled).plus(extra)
    if not hooks:
        return None
    return AgentHooks(hooks, cwd=cwd, env=env, project_dir=cwd, note=note, sandbox=sandbox,
                      roots=tuple(roots) if roots is not None else None,
                      **({"session_id": session_id} if session_id else {}))


def subagent_hooks(parent: AgentHooks | None, extra: HookSet, *, cwd: Path, env: Mapping[str, str], agent_id: str,
                   agent_type: str, sandbox: Sandbox | None = None,
                   roots: Sequence[Path] | None = None) -> AgentHooks | None:
    """A subagent's hooks: its parent's plus its definition's (``extra``), gone when it ends, in its cwd and write
    ``roots`` inside the parent's ``sandbox``; None: none at all."""
    if parent is None:
        if not extra:
            return None
        parent = AgentHooks(HookSet(), cwd=cwd, env=env, project_dir=cwd, sandbox=sandbox)
    return parent.for_agent(extra, subagent=True, cwd=cwd, agent_id=agent_id, agent_type=agent_type, roots=roots)
