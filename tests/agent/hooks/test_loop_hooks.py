"""The loop's hook events: a Stop hook that never lets go is asked a bounded number of times; PreCompact fires
before a compaction. Scripted model, hooks as real shell scripts."""

from __future__ import annotations

import json
from pathlib import Path

from swarm.agent.compaction import CompactionPolicy
from swarm.agent.conversation import Conversation
from swarm.agent.loop import MAX_STOP_HOOK_BLOCKS, AgentSpec, run_agent
from swarm.agent.tool_api.context import AgentIdentity, AgentServices, ToolContext
from swarm.agent.tools import core_tools
from swarm.models.scripted import ScriptedProvider
from tests.agent.hooks.hook_helpers import agent_hooks, hook_settings, script


def test_a_stop_hook_that_always_blocks_cannot_keep_the_agent_forever(tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    nag = script(tmp_path, "nag.sh", f"cat >> {calls}; echo >> {calls}\necho 'not yet' >&2\nexit 2\n")
    notes: list[str] = []
    conversation = Conversation()
    conversation.add_user_text("hello")
    ctx = ToolContext(AgentIdentity(cwd=tmp_path), services=AgentServices(
        hooks=agent_hooks(tmp_path, hook_settings(Stop=[("", nag, None)]), notes=notes)))
    run = run_agent(AgentSpec(provider=ScriptedProvider(None), tools=core_tools()), conversation, ctx)
    assert run.ok
    seen = [json.loads(line) for line in calls.read_text().splitlines() if line.strip()]
    assert len(seen) == MAX_STOP_HOOK_BLOCKS and [s["stop_hook_active"] for s in seen[:2]] == [False, True]
    assert run.turns == MAX_STOP_HOOK_BLOCKS + 1
    assert notes == [f"Stop hooks kept the agent going {MAX_STOP_HOOK_BLOCKS} times; it stops now"]


def test_pre_compact_fires_before_the_summary(tmp_path: Path) -> None:
    seen = tmp_path / "seen.json"
    hook = script(tmp_path, "pre.sh", f"cat > {seen}\n")
    conversation = Conversation(context_tokens=5_000)  # over the 1,000-token window below: compacted first
    conversation.add_user_text("a long story")
    ctx = ToolContext(AgentIdentity(cwd=tmp_path), services=AgentServices(
        hooks=agent_hooks(tmp_path, hook_settings(PreCompact=[("auto", hook, None)]))))
    spec = AgentSpec(provider=ScriptedProvider(None), tools=core_tools(),
                     compaction=CompactionPolicy(window=1_000, percent=100))
    assert run_agent(spec, conversation, ctx).ok
    payload = json.loads(seen.read_text())
    assert (payload["hook_event_name"], payload["trigger"]) == ("PreCompact", "auto")
