"""The team's gate with real teammate processes, the real SDK and the fake API: a budget, a shared rate limit."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from tests.fakes import FakeAnthropicServer, text_reply, tool_use_reply, usage_json
from tests.runtime.up.helpers import Up

pytestmark = pytest.mark.usefixtures("served")  # teammates forked from the home's CLI server (tests.zygote)


def _team_file(up: Up, name: str, members: list[str], extra: str = "") -> Path:
    body = f'[team]\nname = "{name}"\n{extra}\n' + "".join(
        f'[[members]]\nname = "{m}"\nprompt = "look at the task list"\nbackend = "subprocess"\n'
        f'model = "claude-sonnet-4-6"\n\n' for m in members)
    path = up.tmp / f"{name}.toml"
    path.write_text(body)
    return path


def _online(up: Up, api: FakeAnthropicServer) -> None:
    up.env.update(ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=api.base_url, SWARM_API_MAX_DELAY="0.2")


def test_a_budget_reached_mid_run_stops_every_member_s_next_call_and_says_so(up: Up,
                                                                            api: FakeAnthropicServer) -> None:
    _online(up, api)
    # every answer is one more tool call and costs $0.30 (100k input tokens of claude-sonnet-4-6 at $3/MTok)
    answer = tool_use_reply("TaskList", {}, usage=usage_json(100_000, 0))
    # the two first answers wait for both first requests: each member has made a call before the budget is spent
    # (a member forked fast could otherwise spend it alone, two calls in, before the other asks at all)
    first, second = threading.Event(), threading.Event()
    api.enqueue(replace(answer, opens=first, gate=second), replace(answer, opens=second, gate=first))
    api.otherwise(answer)
    team = _team_file(up, "budget", ["alice", "bob"], "max_cost = 2.0")
    done = up.run("up", str(team), "--headless", "--json", "--timeout", "60", "--max-cost", "0.5")
    report = json.loads(done.stdout)
    assert report["cost"]["budget_reached"] is True and report["cost"]["max_cost"] == 0.5
    assert 0.5 <= report["cost"]["usd"] <= 0.9 + 1e-9
    assert len(api.requests) <= 3, "model calls went on after the budget was spent"
    for member in report["members"]:
        assert "budget of $0.50 is spent" in (member["failure"] or ""), member
        assert member["cost_usd"] > 0
    assert any("budget was reached" in w for w in report["warnings"])
    assert "budget was reached" in done.stderr  # the person is told too

    status = json.loads(up.run("status", "--team", "budget", "--json").stdout)
    assert sum(r["cost_usd"] for r in status) == pytest.approx(report["cost"]["usd"])
    text = up.run("status", "--team", "budget").stdout
    assert "team cost: $0." in text and "of a $0.50 budget (reached" in text


def test_eight_teammates_share_two_request_slots_without_a_single_429(up: Up, api: FakeAnthropicServer) -> None:
    _online(up, api)
    up.env["SWARM_CLI_SERVER"] = "1"  # as a person's `swarm up` runs: 8 teammates forked with the SDK loaded once
    api.limit_concurrency(2, retry_after=1.0)  # the API key's limit: a third request in flight is refused
    api.otherwise(replace(tool_use_reply("TaskList", {}), delay=0.2))
    api.enqueue(replace(text_reply("done"), delay=0.2), after="tool_result", repeat=True)
    names = [f"m{i}" for i in range(8)]
    team = _team_file(up, "eight", names, "max_concurrent_requests = 2")
    done = up.run("up", str(team), "--headless", "--json", "--timeout", "90", timeout=150)
    report = json.loads(done.stdout)
    assert report["reason"] == "settled", (report, done.stderr[-2000:])
    assert sorted(m["name"] for m in report["members"] if m["result"] == "done") == names  # everyone finished
    assert api.max_in_flight <= 2
    assert api.rejected == 0, "members sent into the API's limit"
    # two turns each (the task, then the shutdown request), two calls a turn, and no retries: no storm
    assert len(api.requests) == 8 * 2 * 2
