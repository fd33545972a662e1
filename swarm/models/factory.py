"""Choosing a model provider from a model name, a playbook and the environment."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from swarm.errors import UsageError
from swarm.models.anthropic_provider import AnthropicProvider
from swarm.models.base import ModelProvider
from swarm.models.credentials import HOW_TO_SET, find_credentials, real_model_asked
from swarm.models.scripted import SCRIPTED, ScriptedProvider
from swarm.models.team_gate import TeamGate


@dataclass(frozen=True)
class Choice:
    """Which model an agent will run on, and why (``make_provider``'s decision, before anything is built)."""

    scripted: bool
    model: str | None
    playbook: Path | None
    why: str

    def notice(self) -> str:
        """One line for stderr: which model runs, and how to get another."""
        if not self.scripted:
            return f"model: {self.model or 'the default Claude model'} through the Anthropic API ({self.why})"
        if self.playbook is not None:
            return f"model: the offline scripted model playing {self.playbook} ({self.why})"
        return ("model: the offline scripted model, which only echoes what it receives (no ANTHROPIC_API_KEY): "
                "export ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) to run Claude, or pass --playbook")


def choose_model(model: str | None, *, playbook: Path | None, env: Mapping[str, str]) -> Choice:
    """The first rule that applies (see ``make_provider``); the same UsageError it raises."""
    scripted_path = _scripted_path(model)
    if scripted_path is not None or model == SCRIPTED:
        return Choice(True, SCRIPTED, _one_playbook(scripted_path, playbook), f"asked for {model}")
    if playbook is not None:
        return Choice(True, SCRIPTED, playbook, "a playbook was given")
    credentials = find_credentials(env)
    if credentials is not None:
        credentials.check_extras()
        return Choice(False, model or env.get("ANTHROPIC_MODEL") or None, None, f"{credentials.source} is set")
    asked = real_model_asked(model, env)
    if asked is not None:
        raise UsageError(f"{asked} but there are no credentials for Claude; {HOW_TO_SET}, "
                         "or pass --model scripted to run offline")
    return Choice(True, SCRIPTED, None, "no ANTHROPIC_API_KEY")


def make_provider(
    model: str | None,
    *,
    playbook: Path | None,
    env: Mapping[str, str],
    variables: dict[str, str] | None = None,
    on_text: Callable[[str], None] | None = None,
    gate: TeamGate | None = None,
) -> ModelProvider:
    """The provider for ``model``; the first rule that applies wins.

    1. ``model`` is ``"scripted"`` or ``"scripted:<path>"`` → ``ScriptedProvider``
       with that playbook path (else ``playbook``; both given and different →
       ``UsageError``).
    2. ``playbook`` is given → ``ScriptedProvider``, whatever ``model`` says.
    3. ``env`` has credentials (``swarm.models.credentials``: an API key, a
       bearer token, Bedrock, Vertex) → ``AnthropicProvider`` for ``model``,
       else ``env["ANTHROPIC_MODEL"]``, else its default (Bedrock or Vertex
       without its SDK extra → ``UsageError``).
    4. A real model was plainly asked for (``model`` named, or
       ``ANTHROPIC_MODEL`` set) → ``UsageError`` naming what to set: never
       the echo model then.
    5. Otherwise → ``ScriptedProvider`` without a playbook (the offline
       default).

    ``variables`` (e.g. ``agent_name``, ``team``) fill the playbook's
    slots; the Anthropic provider ignores them. ``on_text`` hears the Anthropic
    model's text as it streams (the scripted model answers whole). ``choose_model`` tells the
    same decision without building anything. ``gate``: the team's budget, request slots and shared
    backoff the Anthropic provider's requests pass (``swarm.models.team_gate``).
    """
    choice = choose_model(model, playbook=playbook, env=env)
    if not choice.scripted:
        provider = AnthropicProvider(model=model, env=env, gate=gate)
        if on_text is not None:
            provider.on_text = on_text
        return provider
    return ScriptedProvider(choice.playbook, variables=variables)


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
