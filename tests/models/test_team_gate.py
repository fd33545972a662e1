"""The team's gate on model requests, through the real SDK against the fake API: prices, budget, shared backoff."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from swarm.models.anthropic_provider import AnthropicProvider
from swarm.models.retry_policy import RetryPolicy
from swarm.models.base import ModelRequest
from swarm.models.catalog import cost_usd
from swarm.models.messages import Message, Usage
from swarm.models.team_gate import BudgetReached, GateLimits, TeamGate, read_spends, write_limits
from tests.fakes import FakeAnthropicServer, ScriptedReply, error_reply, message_json, text_reply, usage_json


def hello(text: str = "hello") -> ModelRequest:
    return ModelRequest(messages=[Message.user_text(text)])


def provider(server: FakeAnthropicServer, gate: TeamGate, model: str = "claude-sonnet-4-6") -> AnthropicProvider:
    return AnthropicProvider(model=model, gate=gate, retry=RetryPolicy(max_retries=3, base_delay=0.01),
                             env={"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": server.base_url}, timeout=10.0)


def test_prices_come_from_the_model_table() -> None:
    usage = Usage(input_tokens=1000, output_tokens=100, cache_read_input_tokens=2000, cache_creation_input_tokens=400)
    # claude-sonnet-4-6: $3 in, $15 out, $3.75 cache write, $0.30 cache read per million tokens
    assert cost_usd("claude-sonnet-4-6", usage) == pytest.approx((3000 + 1500 + 1500 + 600) / 1e6)
    assert cost_usd("claude-sonnet-4-6-20260101", usage) == cost_usd("claude-sonnet-4-6", usage)
    assert cost_usd("claude-unknown-9", usage) is None


def test_each_call_is_charged_to_its_member(tmp_path: Path, anthropic_server: FakeAnthropicServer) -> None:
    anthropic_server.enqueue(*(text_reply("hi", usage=usage_json(1000, 100, cache_read=2000, cache_creation=400))
                               for _ in range(2)))
    with provider(anthropic_server, TeamGate(tmp_path, "alice")) as alice:
        alice.complete(hello())
        alice.complete(hello())
    spend = read_spends(tmp_path)["alice"]
    assert spend.calls == 2 and spend.input_tokens == 2000 and spend.cache_read_input_tokens == 4000
    assert spend.usd == pytest.approx(2 * 0.0066)


def test_a_spent_budget_stops_the_next_call_before_it_is_sent(tmp_path: Path,
                                                             anthropic_server: FakeAnthropicServer) -> None:
    write_limits(tmp_path, GateLimits(max_cost=0.01))
    anthropic_server.otherwise(text_reply("hi", usage=usage_json(1000, 100, cache_read=2000, cache_creation=400)))
    with provider(anthropic_server, TeamGate(tmp_path, "alice")) as alice, \
            provider(anthropic_server, TeamGate(tmp_path, "bob")) as bob:
        alice.complete(hello())  # $0.0066
        bob.complete(hello())  # $0.0132: over the team's budget, though each member alone is under it
        with pytest.raises(BudgetReached, match=r"budget of \$0.01 is spent.*--max-cost"):
            alice.complete(hello())
        with pytest.raises(BudgetReached):
            bob.complete(hello())
    assert len(anthropic_server.requests) == 2


def test_a_retry_after_seen_by_one_member_holds_back_the_others(tmp_path: Path,
                                                                anthropic_server: FakeAnthropicServer) -> None:
    arrivals: dict[str, list[float]] = {"alice": [], "bob": []}

    def answer(who: str) -> Callable[[Any], Any]:
        def body(request: Any) -> Any:
            arrivals[who].append(time.monotonic())
            return message_json([{"type": "text", "text": "ok"}])
        return body

    limited = error_reply(429, "rate_limit_error", "slow down", headers={"retry-after": "1.5"})
    anthropic_server.enqueue(limited, when="from alice")
    anthropic_server.enqueue(ScriptedReply(200, answer("alice")), when="from alice", repeat=True)
    anthropic_server.enqueue(ScriptedReply(200, answer("bob")), when="from bob", repeat=True)
    with provider(anthropic_server, TeamGate(tmp_path, "alice")) as alice, \
            provider(anthropic_server, TeamGate(tmp_path, "bob")) as bob:
        first = threading.Thread(target=alice.complete, args=(hello("from alice"),))
        began = time.monotonic()
        first.start()
        time.sleep(0.3)  # alice has had her 429 by now; bob asks inside her retry-after
        bob.complete(hello("from bob"))
        first.join(10)
    assert arrivals["alice"] and arrivals["bob"]
    assert arrivals["bob"][0] - began >= 1.4, "bob sent into the limit alice had been told to wait out"
    assert len(anthropic_server.requests) == 3  # alice's 429, alice's retry, bob's one request


def test_a_killed_holder_does_not_keep_its_slot(tmp_path: Path) -> None:
    import subprocess
    import sys
    write_limits(tmp_path, GateLimits(max_concurrent_requests=1))
    holder = subprocess.Popen([sys.executable, "-c",
                               "import sys,time;from pathlib import Path;from swarm.models.team_gate import TeamGate\n"
                               f"g=TeamGate(Path({str(tmp_path)!r}),'holder')\n"
                               "with g.in_flight():\n print('held',flush=True);time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        taken = threading.Event()

        def take() -> None:
            with TeamGate(tmp_path, "waiter").in_flight():
                taken.set()

        waiter = threading.Thread(target=take, daemon=True)
        waiter.start()
        assert not taken.wait(0.5), "two requests in flight with one slot"
        holder.kill()  # kill -9: no release ran
        assert taken.wait(5), "a dead holder's slot was never freed"
    finally:
        holder.kill()
        holder.wait()


def test_calls_made_before_the_gate_had_a_team_are_charged_when_it_gets_one(
        tmp_path: Path, anthropic_server: FakeAnthropicServer) -> None:
    anthropic_server.otherwise(text_reply("hi", usage=usage_json(1000, 100, cache_read=2000, cache_creation=400)))
    gate = TeamGate(None, "team-lead")
    with provider(anthropic_server, gate) as lead:
        lead.complete(hello())  # e.g. the call that answers with TeamCreate
        assert read_spends(tmp_path) == {}
        gate.bind(tmp_path)
        lead.complete(hello())
    assert read_spends(tmp_path)["team-lead"].calls == 2


def test_hostile_gate_files_neither_hang_nor_stop_a_call(tmp_path: Path, anthropic_server: FakeAnthropicServer) -> None:
    import os
    (tmp_path / "spend").mkdir()
    (tmp_path / "spend" / "evil.json").write_text("{not json")
    os.mkfifo(tmp_path / "spend" / "fifo.json")  # a reader that opened it blindly would block forever
    (tmp_path / "not_before.json").mkdir()
    write_limits(tmp_path, GateLimits(max_concurrent_requests=1))
    (tmp_path / "slot-0").mkdir()  # the only slot is not a file
    anthropic_server.enqueue(text_reply("hi"))
    with provider(anthropic_server, TeamGate(tmp_path, "alice")) as alice:
        assert alice.complete(hello()).content
    assert read_spends(tmp_path)["alice"].calls == 1
