"""Model names: the aliases ``haiku``/``sonnet``/``opus``/``fable``, and the one rule for which model an agent runs.

``agent_model`` is one chain for every kind of agent, first set value wins
(Claude Code's ``getAgentModel``)::

    SWARM_SUBAGENT_MODEL, then CLAUDE_CODE_SUBAGENT_MODEL   (environment; forces every subagent)
    > the explicit ask (``--model``, a teammate's ``model``, the Agent tool's ``model``)
    > the definition's ``model``
    > the parent's model                                    ("inherit"; none: the provider's default)

``inherit`` at any level means the parent's model at once; an empty or
blank value counts as unset. The result is alias-expanded, so no agent
sends a bare alias to the API.

An offline parent stays offline: when the parent runs the scripted model
(``scripted`` or ``scripted:<playbook>``) the child gets exactly the
parent's model whatever the chain says, so a test or demo never reaches for
the network because a definition says ``model: haiku``.

``expand_alias`` maps an alias to a model id, overridable per alias by
``SWARM_MODEL_<ALIAS>``, then Claude Code's ``ANTHROPIC_DEFAULT_<ALIAS>_MODEL``;
the ids themselves are the model table's (``swarm.models.catalog.ALIASES``).
A name that is neither an alias nor a model id is a one-line UsageError
(``catalog.check_name``) before anything starts.
"""

from __future__ import annotations

from collections.abc import Mapping

from swarm.models.catalog import ALIASES as CATALOG_ALIASES
from swarm.models.catalog import check_name
from swarm.models.scripted import SCRIPTED

ALIASES = tuple(CATALOG_ALIASES)
INHERIT = "inherit"
DEFAULT_IDS: Mapping[str, str] = CATALOG_ALIASES
"""Alias → model id (the model table's)."""
SUBAGENT_MODEL_VARIABLES = ("SWARM_SUBAGENT_MODEL", "CLAUDE_CODE_SUBAGENT_MODEL")


def expand_alias(model: str, env: Mapping[str, str]) -> str:
    """The model id for ``haiku``/``sonnet``/``opus``/``fable`` (case-insensitive); any other name unchanged.

    ``SWARM_MODEL_<ALIAS>`` wins over ``ANTHROPIC_DEFAULT_<ALIAS>_MODEL``,
    which wins over ``DEFAULT_IDS``.
    """
    alias = model.strip().lower()
    if alias not in ALIASES:
        return model
    upper = alias.upper()
    return _first_set(env, (f"SWARM_MODEL_{upper}", f"ANTHROPIC_DEFAULT_{upper}_MODEL")) or DEFAULT_IDS[alias]


def agent_model(*, env: Mapping[str, str], asked: str | None, definition_model: str | None,
                parent_model: str | None, subagent: bool = True) -> str | None:
    """The model an agent runs (see the module docstring for the chain and the scripted rule).

    ``parent_model`` None: the agent is its process's own (the main agent, a
    teammate), which inherits the provider's default — None is returned then.
    The environment's subagent override applies to ``subagent`` agents only.
    """
    if parent_model is not None and is_scripted(parent_model):
        return parent_model
    forced = _first_set(env, SUBAGENT_MODEL_VARIABLES) if subagent else None
    candidates = (forced, asked, definition_model)
    chosen = next((c.strip() for c in candidates if c is not None and c.strip()), INHERIT)
    check_name(chosen)
    if chosen.lower() == INHERIT:
        return expand_alias(parent_model, env) if parent_model is not None else None
    return expand_alias(chosen, env)


def is_scripted(model: str) -> bool:
    """True for the offline scripted model: ``scripted`` or ``scripted:<playbook>``."""
    return model == SCRIPTED or model.startswith(SCRIPTED + ":")


def _first_set(env: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    """The first of ``names`` with a non-blank value in ``env``, stripped."""
    return next((env[n].strip() for n in names if env.get(n, "").strip()), None)
