"""An interrupted turn cuts the model's streamed answer short: the connection closes at the next event, no retry.

The real ``anthropic`` SDK against the fake Messages API, whose answer arrives a few words at a time; the
person "interrupts" as the first words show (``on_text``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace

import pytest

from swarm.errors import AnswerInterrupted
from swarm.models.anthropic_provider import AnthropicProvider
from swarm.models.base import ModelRequest
from swarm.models.messages import Message
from tests.backends.helpers import retry_until
from tests.fakes import FakeAnthropicServer
from tests.fakes.anthropic_server import text_reply

Make = Callable[..., AnthropicProvider]
LONG = "word " * 80  # ~60 events: ~6 s at 0.1 s each when read to the end


def _hello() -> ModelRequest:
    return ModelRequest(messages=[Message.user_text("hello")], max_tokens=100)


def test_an_interrupt_abandons_the_answer_at_its_next_event_and_closes_the_connection(
        make_anthropic: Make, anthropic_server: FakeAnthropicServer) -> None:
    anthropic_server.enqueue(replace(text_reply(LONG), pace=0.1), text_reply("a retry would get this"))
    stop = threading.Event()
    provider: AnthropicProvider = make_anthropic()
    heard: list[str] = []
    provider.on_text = lambda text: (heard.append(text), stop.set())  # the person interrupts as words show
    began = time.monotonic()
    with pytest.raises(AnswerInterrupted, match="interrupted while the model answered"):
        provider.complete(_hello(), stop)
    assert time.monotonic() - began < 3.0  # not the ~6 s the whole answer takes
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
