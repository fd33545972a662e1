"""Fixtures: a fake Anthropic server per test and providers pointed at it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from swarm.models.anthropic_provider import AnthropicProvider
from swarm.models.retry_policy import RetryPolicy
from tests.fakes import FakeAnthropicServer
from tests.models.helpers import SleepRecorder


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


@pytest.fixture
def make_anthropic(anthropic_server: FakeAnthropicServer,
                   sleeps: SleepRecorder) -> Iterator[Callable[..., AnthropicProvider]]:
    """Build providers against the fake server (fast retries, recorded sleeps); closes them."""
    made: list[AnthropicProvider] = []

    def build(**overrides: Any) -> AnthropicProvider:
        options: dict[str, Any] = {
            "env": {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": anthropic_server.base_url},
            "retry": RetryPolicy(max_retries=3, base_delay=0.01, max_delay=0.5),
            "sleep": sleeps,
            "rand": lambda: 0.0,
            "timeout": 5.0,
        }
        options.update(overrides)
        provider = AnthropicProvider(**options)
        made.append(provider)
        return provider

    yield build
    for provider in made:
        provider.close()
