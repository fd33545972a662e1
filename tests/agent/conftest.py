from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from swarm.models.anthropic_provider import AnthropicProvider
from swarm.models.retry_policy import RetryPolicy
from tests.conftest import trust_tmp_dirs
from tests.fakes import FakeAnthropicServer


@pytest.fixture
def claude(api: FakeAnthropicServer) -> Iterator[AnthropicProvider]:
    """The real SDK, over HTTP, to the fake server."""
    provider = AnthropicProvider(env={"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": api.base_url},
                                 retry=RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.05), timeout=10)
    yield provider
    provider.close()


@pytest.fixture
def config(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The user-level Claude directory of a test (CLAUDE_CONFIG_DIR); like the top conftest's, it trusts tmp dirs."""
    path = tmp_path / "claude-config"
    path.mkdir()
    trust_tmp_dirs(path, tmp_path_factory)
    return path


@pytest.fixture
def env(config: Path) -> dict[str, str]:
    """An environment whose user-level Claude directory is ``config`` and whose HOME leads nowhere."""
    return {"CLAUDE_CONFIG_DIR": str(config), "HOME": "/nonexistent-home"}


BOMB = "---\nname: bomb\na: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n" + "".join(
    f"{b}: &{b} [{', '.join(['*' + a] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi")) + "description: *i\n---\nbody\n"
"""A billion-laughs alias bomb: nine levels of nine aliases each (9**9 strings once expanded) in a field that is
checked, about 450 bytes."""
DEEP = "---\ndescription: deep\ntools: " + "[" * 5000 + "]" * 5000 + "\n---\nbody\n"
