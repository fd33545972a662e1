"""The session-level hook events of a process's own agent: ``SessionStart``, ``UserPromptSubmit``, ``SessionEnd``.

``MainSession`` (``swarm run``, the lead) fires all three; a teammate's
session fires ``SessionStart`` and ``SessionEnd``. ``SessionStart`` output
(plain stdout or ``additionalContext``) opens the first message after the
context block. ``UserPromptSubmit`` sees what the person typed: exit 2 or
``decision: "block"`` refuses the prompt (it never reaches the model, the
person reads why), ``continue: false`` too; its output is context added after
the prompt.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from swarm.agent.conversation import Conversation
from swarm.agent.hooks.outcome import HookOutcome
from swarm.agent.hooks.session import AgentHooks
from swarm.agent.loop import AgentRun


class _Moded(Protocol):
    @property
    def mode(self) -> str: ...


@dataclass(frozen=True)
class Submitted:
    """The prompt to send (with the hooks' context), or the run that answers a refused prompt."""

    text: str
    refused: AgentRun | None = None


class SessionHooks:
    """The session events of one agent; without hooks each is a no-op."""

    def __init__(self, hooks: AgentHooks | None, conversation: Conversation,
                 gate: Callable[[], _Moded | None] = lambda: None) -> None:
        self.hooks = hooks
        self.conversation = conversation
        self.gate = gate

    def session_start(self, source: str) -> str:
        """``SessionStart`` (``startup``, ``resume``): the context its hooks add ("" for none)."""
        if self.hooks is None or not self.hooks.active("SessionStart", source):
            return ""
        return self._fire("SessionStart", source, source=source).context_text

    def prompt(self, text: str) -> Submitted:
        """``UserPromptSubmit`` on ``text``."""
        if self.hooks is None or not self.hooks.active("UserPromptSubmit"):
            return Submitted(text)
        outcome = self._fire("UserPromptSubmit", None, prompt=text)
        if outcome.blocked or outcome.stop:
            why = outcome.reason if outcome.blocked else outcome.stop_reason
            self.hooks.note(f"prompt refused by a UserPromptSubmit hook: {why}")
            return Submitted(text, AgentRun("", "hook_stopped", detail=why))
        context = outcome.context_text
        return Submitted(f"{text}\n\n{context}" if context else text)

    def session_end(self, reason: str) -> None:
        if self.hooks is not None and self.hooks.active("SessionEnd", reason):
            self._fire("SessionEnd", reason, reason=reason)

    def _fire(self, event: str, target: str | None, **fields: object) -> HookOutcome:
        assert self.hooks is not None
        gate = self.gate()
        return self.hooks.fire(event, target=target, transcript=self.conversation.transcript,
                               permission_mode=gate.mode if gate is not None else "bypassPermissions", **fields)
