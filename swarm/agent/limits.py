"""Run limits and the exceptions that stop the loop.

    AgentStop            the loop ended for a reason other than end_turn
    ├── LimitReached     max turns, token budget or wall time
    ├── Interrupted      cancellation (SIGINT, a cancel event)
    ├── TooManyToolErrors  the model kept making failing tool calls
    ├── ModelStopped     the model refused, or its output was cut at max_tokens too often
    └── EndRun           a tool finished the run (e.g. a shutdown was approved);
                         raised by the tool, its message is the tool's result
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from swarm.models.messages import Usage


@dataclass(frozen=True)
class Limits:
    max_turns: int = 0
    """Most model calls in one run; 0 means unlimited."""
    max_tokens: int = 0
    """Token budget (input + output + cache) for one run; 0 means unlimited."""
    max_seconds: float = 0
    """Wall-time budget in seconds for one run; 0 means unlimited."""
    max_consecutive_tool_errors: int = 8
    """Steps in a row whose tool calls were all malformed (unknown tool, invalid input)
    before the run ends; 0 means unlimited. Tools that run and fail do not count."""

    def check(self, *, turns: int, usage: Usage, started: float) -> None:
        """Raise LimitReached if another model call would exceed a limit."""
        if self.max_turns and turns >= self.max_turns:
            raise LimitReached("max_turns", f"reached the limit of {self.max_turns} turns")
        if self.max_tokens and usage.total >= self.max_tokens:
            raise LimitReached("token_budget", f"used {usage.total} tokens of a {self.max_tokens} budget")
        if self.max_seconds and time.monotonic() - started >= self.max_seconds:
            raise LimitReached("wall_time", f"ran past the {self.max_seconds:g}s time limit")


class AgentStop(Exception):
    """The loop stopped early; ``reason`` is a short stable code."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class LimitReached(AgentStop):
    pass


class Interrupted(AgentStop):
    def __init__(self, message: str = "interrupted") -> None:
        super().__init__("interrupted", message)


class TooManyToolErrors(AgentStop):
    def __init__(self, count: int) -> None:
        super().__init__("tool_errors", f"{count} steps in a row had only malformed tool calls")


class ModelStopped(AgentStop):
    """The model's own stop reason ends the run: ``refusal``, or ``max_tokens`` once continuing no longer helps."""


class EndRun(AgentStop):
    """Raised by a tool whose work ends the run after the current step (as mini-swe-agent's ``Submitted``).

    The message becomes the call's (successful) tool result; the other calls of
    the step are not run, and the loop stops with ``reason``.
    """
