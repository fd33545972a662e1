"""``agent_type`` in a team file starts the member from that agent definition (its prompt and tools)."""

from __future__ import annotations

import json

import pytest

from tests.runtime.up.helpers import Up

pytestmark = pytest.mark.usefixtures("served")  # teammates forked from the home's CLI server (tests.zygote)

READER = """---
name: reader
description: reads and reports
tools: Read, Grep
---
You only read files, and you report what you read.
"""

PLAYBOOK = r"""
[[rules]]
name = "as the reader"
match = 'report in'
system = 'You only read files'
tool_calls = [{ name = "Bash", input = { command = "echo hi" } }]

[[rules]]
name = "report"
on = "tool_result"
match = '(?P<error>unknown tool .*)'
tool_calls = [{ name = "SendMessage", input = { to = "team-lead", message = "{error}", summary = "reader" } }]

[[rules]]
name = "done"
on = "tool_result"
match = 'Message sent'
text = "reported"
"""

TEAM = """
[team]
name = "readers"

[[members]]
name = "r"
prompt = "report in"
playbook = "{playbook}"
agent_type = "reader"
backend = "subprocess"
"""


def test_a_members_agent_type_gives_it_the_definitions_prompt_and_tools(up: Up) -> None:
    (up.repo / ".claude" / "agents").mkdir(parents=True)
    (up.repo / ".claude" / "agents" / "reader.md").write_text(READER)
    playbook = up.tmp / "reader.toml"
    playbook.write_text(PLAYBOOK)
    team = up.tmp / "team.toml"
    team.write_text(TEAM.replace("{playbook}", str(playbook)))
    result = up.run("up", str(team), "--headless", "--json")
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    report = json.loads(result.stdout)
    messages = [m["text"] for m in report["messages"] if m["sender"] == "r" and m["kind"] == "message"]
    assert messages == ["unknown tool 'Bash'; available tools: Grep, Read, SendMessage, TaskCreate, TaskGet, TaskList, TaskUpdate"], report
    config = up.config("readers")
    assert [m["agentType"] for m in config["members"] if m["name"] == "r"] == ["reader"]
