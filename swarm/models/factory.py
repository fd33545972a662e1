"""Choosing a model provider from a model name, a playbook and the environment."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from swarm.errors import UsageError
from swarm.models.anthropic_provider import AnthropicProvider
from swarm.models.base import ModelProvider
from swarm.models.scripted import SCRIPTED, ScriptedProvider

log = logging.getLogger(__name__)


def make_provider(
    model: str | None,
    *,
    playbook: Path | None,
    env: Mapping[str, str],
    variables: dict[str, str] | None = None,
) -> ModelProvider:
    """The provider for ``model``; the first rule that applies wins.

    1. ``model`` is ``"scripted"`` or ``"scripted:<path>"`` → ``ScriptedProvider``
       with that playbook path (else ``playbook``; both given and different →
       ``UsageError``).
    2. ``playbook`` is given → ``ScriptedProvider``, whatever ``model`` says.
    3. ``env`` has a non-empty ``ANTHROPIC_API_KEY`` → ``AnthropicProvider``
       for ``model``, else ``env["ANTHROPIC_MODEL"]``, else its default.
    4. Otherwise → ``ScriptedProvider`` without a playbook (the offline
       default; a warning is logged if ``model`` named another model).

    ``variables`` (e.g. ``agent_name``, ``team``) fill the playbook's
    slots; the Anthropic provider ignores them.
    """
    scripted_path = _scripted_path(model)
    if scripted_path is not None or model == SCRIPTED:
        return ScriptedProvider(_one_playbook(scripted_path, playbook), variables=variables)
    if playbook is not None:
        return ScriptedProvider(playbook, variables=variables)
    if env.get("ANTHROPIC_API_KEY"):
        return AnthropicProvider(model=model, env=env)
    if model:
        log.warning("used scripted model offline", extra={"model": model, "reason": "ANTHROPIC_API_KEY not set"})
    return ScriptedProvider(variables=variables)


def _scripted_path(model: str | None) -> Path | None:
    prefix = SCRIPTED + ":"
    if model is None or not model.startswith(prefix):
        return None
    raw = model[len(prefix):]
    if not raw:
        raise UsageError("model 'scripted:' needs a playbook path after the colon, e.g. scripted:play.toml")
    return Path(raw)


def _one_playbook(from_model: Path | None, given: Path | None) -> Path | None:
    if from_model is not None and given is not None and from_model != given:
        raise UsageError(f"two playbooks given ({from_model} in the model name, {given} as playbook); pass one")
    return from_model or given
