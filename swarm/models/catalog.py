"""The model table: each Claude model swarm knows, with its window, output limit, thinking and prices.

One owner for what a model *is*: the aliases (``haiku``, ``sonnet``,
``opus``, ``fable``) name an id here; the compaction threshold reads the
window, a request's ``max_tokens`` the output limit, cost reports the prices
(``cost_usd``). Figures are Anthropic's published ones for each model (Models
overview and Pricing pages, December 2026: input and output per million
tokens; a 5-minute cache write is 1.25 × input, a cache hit 0.1 × input, as
the Pricing page states for every model). A ``claude-*`` id the table does
not list (a newer model) is used as it is, with the figures of ``UNLISTED``; Claude Code's ``[1m]``
suffix asks for a 1M window. A name that is neither an alias nor a Claude
model id is refused before anything starts (``check_name``).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from swarm.errors import UsageError
from swarm.models.messages import Usage

Thinking = Literal["adaptive", "extended", "none"]


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens."""

    input: float
    output: float
    cache_write: float
    """A 5-minute cache write (1.25 × input)."""
    cache_read: float
    """A cache hit (0.1 × input)."""

    @classmethod
    def of(cls, input_price: float, output_price: float) -> Price:
        return cls(input_price, output_price, round(input_price * 1.25, 4), round(input_price * 0.1, 4))

    def cost(self, usage: Usage) -> float:
        """US dollars for ``usage`` at these prices."""
        return (usage.input_tokens * self.input + usage.output_tokens * self.output
                + usage.cache_creation_input_tokens * self.cache_write
                + usage.cache_read_input_tokens * self.cache_read) / 1_000_000


@dataclass(frozen=True)
class ModelInfo:
    id: str
    context_window: int
    max_output: int
    thinking: Thinking
    price: Price | None


_M = 1_000_000
_K = 1_000
MODELS = MappingProxyType({info.id: info for info in (
    ModelInfo("claude-fable-5-2", _M, 128 * _K, "adaptive", Price.of(8, 40)),
    ModelInfo("claude-fable-5-1", _M, 128 * _K, "adaptive", Price.of(10, 50)),
    ModelInfo("claude-fable-5", _M, 128 * _K, "adaptive", Price.of(10, 50)),
    ModelInfo("claude-opus-5-5", _M, 128 * _K, "adaptive", Price.of(4, 20)),
    ModelInfo("claude-opus-5", _M, 128 * _K, "adaptive", Price.of(5, 25)),
    ModelInfo("claude-sonnet-5-5", _M, 128 * _K, "adaptive", Price.of(2, 10)),
    ModelInfo("claude-sonnet-5", _M, 128 * _K, "adaptive", Price.of(2, 10)),
    ModelInfo("claude-haiku-5-5", _M, 128 * _K, "adaptive", Price.of(0.1, 0.5)),
    ModelInfo("claude-opus-4-5", 200 * _K, 64 * _K, "extended", Price.of(5, 25)),
    ModelInfo("claude-sonnet-4-6", 200 * _K, 64 * _K, "extended", Price.of(3, 15)),
    ModelInfo("claude-haiku-4-5", 200 * _K, 64 * _K, "extended", Price.of(1, 5)),
)})
"""Known models by id (dated snapshots resolve to their family's entry: ``claude-haiku-4-5-20251001``)."""

ALIASES = MappingProxyType({"haiku": "claude-haiku-5-5", "sonnet": "claude-sonnet-5-5", "opus": "claude-opus-5-5",
                            "fable": "claude-fable-5-2"})
"""Alias → model id: the newest of each family (overridable per alias, ``swarm.models.aliases.expand_alias``)."""

DEFAULT_ALIAS = "sonnet"
"""What an agent runs when nothing names a model: the same model the ``sonnet`` alias names."""

UNLISTED = ModelInfo("", 200 * _K, 32 * _K, "none", None)
"""Figures for a Claude model id the table does not list: the smallest window and a modest output limit."""

LONG_WINDOW_SUFFIX = "[1m]"


def model_info(model: str) -> ModelInfo:
    """What the table says of ``model`` (an id, maybe dated or with ``[1m]``); ``UNLISTED`` figures for others."""
    name = model.strip()
    long = name.lower().endswith(LONG_WINDOW_SUFFIX)
    base = name[: -len(LONG_WINDOW_SUFFIX)] if long else name
    info = MODELS.get(base) or next((i for i in MODELS.values() if base.startswith(i.id + "-")), None)
    found = info or ModelInfo(base, UNLISTED.context_window, UNLISTED.max_output, UNLISTED.thinking, None)
    if long and found.context_window < _M:
        return ModelInfo(found.id, _M, found.max_output, found.thinking, found.price)
    return found


def cost_usd(model: str, usage: Usage) -> float | None:
    """US dollars ``usage`` on ``model`` costs, from the table; None for a model the table has no price for."""
    price = model_info(model).price
    return None if price is None else price.cost(usage)


def check_name(model: str) -> None:
    """UsageError (one line) unless ``model`` is an alias, a Claude model id, ``inherit`` or the offline model."""
    name = model.strip()
    lowered = name.lower()
    if lowered in ALIASES or lowered == "inherit" or lowered.startswith("claude-") or lowered == "scripted" \
            or lowered.startswith("scripted:"):
        return
    raise UsageError(f"unknown model {model!r}: use an alias ({', '.join(ALIASES)}), a model id (claude-...), "
                     "or 'scripted' for the offline model")
