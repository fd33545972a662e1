"""The agent's model provider, whose model a skill may change for the rest of a turn.

A skill with ``model:`` answers with that model until the turn ends
(``reset``). Providers for other models are made on first use and kept for
the process; an offline (scripted) agent stays on its playbook whatever a
skill asks, as its subagents do.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

from swarm.models.aliases import expand_alias, is_scripted
from swarm.models.base import ModelProvider, ModelRequest, ModelResponse


class TurnModel:
    """A ``ModelProvider`` that answers with the agent's own model, or for this turn with a skill's."""

    def __init__(self, base: ModelProvider, make: Callable[[str], ModelProvider], env: Mapping[str, str]) -> None:
        self._base = base
        self._make = make
        self._env = env
        self._others: dict[str, ModelProvider] = {}
        self._current = base

    def use(self, model: str) -> None:
        """Answer with ``model`` (an alias or id) until ``reset``."""
        if is_scripted(self._base.model) or model == "inherit":
            return
        chosen = expand_alias(model, self._env)
        if chosen == self._base.model:
            self._current = self._base
            return
        if chosen not in self._others:
            self._others[chosen] = self._make(chosen)
        self._current = self._others[chosen]

    def switch(self, provider: ModelProvider) -> None:
        """From now on answer with ``provider`` (the person's ``/model``); the old one is closed."""
        if provider is self._base:
            return
        self._others = {k: v for k, v in self._others.items() if v is not provider}
        old, self._base = self._base, provider
        self._current = provider
        old.close()

    @property
    def scripted(self) -> bool:
        return is_scripted(self._base.model)

    def reset(self) -> None:
        """Back to the agent's own model (a new turn starts)."""
        self._current = self._base

    @property
    def name(self) -> str:
        return self._current.name

    @property
    def model(self) -> str:
        return self._current.model

    def complete(self, request: ModelRequest, stop: threading.Event | None = None) -> ModelResponse:
        return self._current.complete(request, stop)

    def close(self) -> None:
        for provider in self._others.values():
            provider.close()
        self._base.close()
