"""A teammate's own hook events: ``SessionStart`` when it joins, ``TeammateIdle`` before it goes idle,
``SessionEnd`` when it leaves.

``TeammateIdle`` (input: ``teammate_name``, ``team_name``) may keep the
teammate working: exit 2 (stderr) or ``decision: "block"`` (``reason``)
becomes its next message and it runs on, up to ``MAX_KEPT_WORKING`` times in
a row (a hook that always objects cannot keep it busy forever);
``continue: false`` lets it go idle.
"""

from __future__ import annotations

import logging

from swarm.agent.conversation import Conversation
from swarm.agent.executor import ToolGate
from swarm.agent.hooks.outcome import HookOutcome
from swarm.agent.hooks.session import AgentHooks

log = logging.getLogger(__name__)

MAX_KEPT_WORKING = 8
"""Times in a row a TeammateIdle hook may send the teammate back to work before it goes idle anyway."""


class TeammateHooks:
    def __init__(self, hooks: AgentHooks | None, conversation: Conversation, gate: ToolGate, name: str,
                 team: str) -> None:
        self.hooks = hooks
        self.conversation = conversation
        self.gate = gate
        self.name = name
        self.team = team
        self.kept = 0

    def started(self) -> None:
        """``SessionStart``: a teammate's context comes from its team, so what the hooks print is not added."""
        source = "resume" if self.conversation.messages else "startup"
        if self.hooks is not None and self.hooks.active("SessionStart", source):
            self._fire("SessionStart", source, source=source)

    def idle(self) -> str | None:
        """``TeammateIdle``: None lets the teammate go idle; else the feedback that keeps it working."""
        if self.hooks is None or not self.hooks.active("TeammateIdle") or self.kept >= MAX_KEPT_WORKING:
            self.kept = 0
            return None
        outcome = self._fire("TeammateIdle", None, teammate_name=self.name, team_name=self.team)
        if outcome.stop or not outcome.blocked:
            self.kept = 0
            return None
        self.kept += 1
        return f"TeammateIdle hook feedback:\n{outcome.reason}"

    def ended(self, reason: str) -> None:
        """``SessionEnd``; whatever happens in it, the teammate still leaves."""
        try:
            if self.hooks is not None and self.hooks.active("SessionEnd", reason):
                self._fire("SessionEnd", reason, reason=reason)
        except Exception:  # the teammate's exit must not depend on a hook
            log.exception("SessionEnd hooks failed")

    def _fire(self, event: str, target: str | None, **fields: object) -> HookOutcome:
        assert self.hooks is not None
        return self.hooks.fire(event, target=target, transcript=self.conversation.transcript,
                               permission_mode=self.gate.mode, **fields)
