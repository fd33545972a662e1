"""How often and how patiently a failed Messages API request is retried (``RetryPolicy``), and the
``SWARM_API_*`` variables that tune it; ``models.anthropic_provider`` applies it to every attempt.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from swarm.errors import UsageError

DEFAULT_READ_TIMEOUT = 90.0
"""Seconds a streamed answer may go without an event before it counts as stalled (retried)."""


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a failed request is retried."""

    max_retries: int = 4
    """Retries after the first attempt; 0 means one attempt only."""
    overloaded_retries: int = 8
    """Retries while the API says it is overloaded (529, ``overloaded_error``): it clears by itself."""
    base_delay: float = 1.0
    """Seconds before the first retry; doubled for each further retry."""
    max_delay: float = 30.0
    """Ceiling (seconds) on a computed wait; a server's retry-after is honoured whole."""
    jitter: float = 0.25
    """Up to this fraction of each computed wait is randomly taken off."""
    read_timeout: float = DEFAULT_READ_TIMEOUT
    """Seconds without an event before a stream counts as stalled."""

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> RetryPolicy:
        """The defaults, with each ``SWARM_API_*`` variable that is set (a bad value is a one-line UsageError)."""
        fields = {"max_retries": ("SWARM_API_MAX_RETRIES", int), "overloaded_retries": ("SWARM_API_OVERLOADED_RETRIES", int),
                  "max_delay": ("SWARM_API_MAX_DELAY", float), "read_timeout": ("SWARM_API_READ_TIMEOUT", float)}
        chosen: dict[str, Any] = {}
        for field_name, (variable, kind) in fields.items():
            raw = env.get(variable, "").strip()
            if not raw:
                continue
            try:
                value = kind(raw)
            except ValueError:
                value = -1
            if value < 0 or (field_name == "read_timeout" and value == 0):
                raise UsageError(f"{variable}={raw!r} is not a {'positive ' if field_name == 'read_timeout' else ''}"
                                 f"number of {'retries' if kind is int else 'seconds'}; fix or unset it")
            chosen[field_name] = value
        return cls(**chosen)

    def attempts(self, overloaded: bool) -> int:
        """Attempts in all (the first and its retries) for a failure of this kind."""
        return 1 + (max(self.max_retries, self.overloaded_retries) if overloaded else self.max_retries)

    def delay(self, retry_index: int, retry_after: float | None, rand: float) -> float:
        """Seconds to wait before retry number ``retry_index`` (0-based).

        ``rand`` is a number in [0, 1); ``retry_after`` is the server's hint, honoured whole.
        """
        if retry_after is not None:
            return max(0.0, retry_after)
        backoff = min(self.max_delay, self.base_delay * 2.0**retry_index)
        return backoff * (1.0 - self.jitter * rand)
