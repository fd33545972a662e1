"""An interrupted turn cuts the model's streamed answer short: the connection closes at the next event, no retry.

The real ``anthropic`` SDK against the fake Messages API, whose answer arrives a few words at a time; the
person "interrupts" as the first words show (``on_text``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from swarm.errors import AnswerInterrupted
from swarm.models.anthropic_provider import AnthropicProvider
from swarm.models.base import ModelRequest
from swarm.models.messages import Message
from swarm.models.retry_policy import RetryPolicy
from swarm.models.team_gate import TeamGate
from tests.backends.helpers import retry_until
from tests.fakes import FakeAnthropicServer
from tests.fakes.anthropic_server import error_reply, text_reply

Make = Callable[..., AnthropicProvider]
LONG = "word " * 80  # ~60 events: ~6 s at 0.1 s each when read to the end


def _hello() -> ModelRequest:
    return ModelRequest(messages=[Message.user_text("hello")], max_tokens=100)


def test_an_interrupt_abandons_the_answer_at_its_next_event_and_closes_the_connection(
        make_anthropic: Make, anthropic_server: FakeAnthropicServer) -> None:
    anthropic_server.enqueue(replace(text_reply(LONG), pace=0.1), text_reply("a retry would get this"))
    stop = threading.Event()
    provider: AnthropicProvider = make_anthropic()
    heard: list[float] = []
    provider.on_text = lambda text: (heard.append(time.monotonic()), stop.set())  # interrupted as words show
    with pytest.raises(AnswerInterrupted, match="interrupted while the model answered"):
        provider.complete(_hello(), stop)
    assert time.monotonic() - heard[0] < 2.0  # not the ~6 s the rest of the answer takes
    assert len(heard) == 1  # nothing handled after the interrupt
    retry_until(lambda: anthropic_server.abandoned == 1, 10, what="the server to see the connection closed")
    assert len(anthropic_server.requests) == 1 and anthropic_server.pending == 1  # and no retry was sent


def test_an_interrupt_set_before_the_call_sends_nothing(make_anthropic: Make,
                                                        anthropic_server: FakeAnthropicServer) -> None:
    stop = threading.Event()
    stop.set()
    with pytest.raises(AnswerInterrupted):
        make_anthropic().complete(_hello(), stop)
    assert anthropic_server.requests == []


def test_without_an_interrupt_the_same_answer_arrives_whole(make_anthropic: Make,
                                                             anthropic_server: FakeAnthropicServer) -> None:
    anthropic_server.enqueue(replace(text_reply("word " * 10), pace=0.01))
    response = make_anthropic().complete(_hello(), threading.Event())
    assert response.message().text() == "word " * 10 and anthropic_server.abandoned == 0


def _interrupt_when(ready: Callable[[], bool]) -> threading.Event:
    """An interrupt set 0.3 s after ``ready()`` holds (the SDK's first import may take a while on a loaded host)."""
    stop = threading.Event()
    threading.Thread(target=lambda: (retry_until(ready, 30, what="the moment to interrupt"), time.sleep(0.3),
                                     stop.set()), daemon=True).start()
    return stop


def test_an_interrupt_ends_the_wait_before_a_retry(make_anthropic: Make,
                                                   anthropic_server: FakeAnthropicServer) -> None:
    anthropic_server.enqueue(error_reply(429, "rate_limit_error", "slow down", headers={"retry-after": "60"}),
                             text_reply("never asked for"))
    stop = _interrupt_when(lambda: len(anthropic_server.requests) == 1)
    with pytest.raises(AnswerInterrupted, match="while the model's answer was retried"):
        make_anthropic().complete(_hello(), stop)
    assert len(anthropic_server.requests) == 1 and anthropic_server.pending == 1  # not the minute the API asked for


def test_an_interrupt_ends_the_wait_for_the_teams_backoff_and_sends_nothing(
        tmp_path: Path, anthropic_server: FakeAnthropicServer) -> None:
    gate = TeamGate(tmp_path, "alice")
    gate.back_off(60)  # a teammate was told retry-after 60: the whole team waits
    provider = AnthropicProvider(gate=gate, retry=RetryPolicy(max_retries=1, base_delay=0.01), timeout=10.0,
                                 env={"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": anthropic_server.base_url})
    began = time.monotonic()
    with pytest.raises(AnswerInterrupted, match="before the model was asked"):
        with provider:
            provider.complete(_hello(), _interrupt_when(lambda: True))
    assert time.monotonic() - began < 30  # not the team's minute
    assert anthropic_server.requests == []
