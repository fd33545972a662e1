"""A subagent's hooks: its definition's ``hooks:`` for its run only (a ``Stop`` there fires as ``SubagentStop``),
``SubagentStart`` context in its first message, the settings' hooks for parent and child alike. Real SDK, fake
API, hooks as real shell scripts."""

from __future__ import annotations

import json
from pathlib import Path

from tests.agent.hooks.hook_helpers import hook_settings, script
from tests.agent.subagent_helpers import PARENT, last_results, run_main, with_text
from tests.fakes import FakeAnthropicServer
from tests.fakes.anthropic_server import text_reply, tool_use_reply

DEFINITION = """---
description: Checks things
hooks:
  PreToolUse:
    - matcher: Bash
      hooks:
        - type: command
          command: {guard}
  Stop:
    - hooks:
        - type: command
          command: {stop}
---
You check things.
"""


def test_definition_hooks_live_only_as_long_as_the_subagent(api: FakeAnthropicServer, tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / ".claude" / "agents").mkdir(parents=True)
    logs = tmp_path / "logs"
    logs.mkdir()
    guard = script(tmp_path, "guard.sh", "cat >/dev/null\necho 'checkers do not run commands' >&2\nexit 2\n")
    stop = script(tmp_path, "stop.sh", f"cat >> {logs}/stop.jsonl; echo >> {logs}/stop.jsonl\n")
    start = script(tmp_path, "start.sh", """cat >/dev/null
echo '{"hookSpecificOutput": {"hookEventName": "SubagentStart", "additionalContext": "remember the style guide"}}'
""")
    (work / ".claude" / "agents" / "checker.md").write_text(DEFINITION.format(guard=guard, stop=stop))
    (work / ".claude" / "settings.json").write_text(json.dumps({"hooks": hook_settings(
        SubagentStart=[("checker", start, None)])}))
    api.enqueue(tool_use_reply("Agent", {"subagent_type": "checker", "description": "check", "prompt": "check it"},
                               tool_id="toolu_p1"),
                tool_use_reply("Bash", {"command": "echo parent-ran"}, tool_id="toolu_p2"),
                text_reply("all done"), when=PARENT)
    api.enqueue(tool_use_reply("Bash", {"command": "echo child-ran"}, tool_id="toolu_c1"),
                text_reply("checked"), when="check it")

    run = run_main(api, work, "go")

    assert run.ok and run.text == "all done"
    child_first, *_ = [r for r in with_text(api, "check it") if PARENT not in json.dumps(r.body)]
    assert "remember the style guide" in json.dumps(child_first.body["messages"][0])
    [child_result] = last_results(with_text(api, "toolu_c1")[0])
    assert child_result.get("is_error") and "checkers do not run commands" in json.dumps(child_result)
    [parent_result] = last_results(with_text(api, "toolu_p2")[-1])
    assert "parent-ran" in json.dumps(parent_result) and not parent_result.get("is_error")
    [stopped] = [json.loads(line) for line in (logs / "stop.jsonl").read_text().splitlines() if line.strip()]
    assert stopped["hook_event_name"] == "SubagentStop" and stopped["agent_type"] == "checker"
    assert stopped["last_assistant_message"] == "checked"
