"""``swarm run -p`` and ``swarm mcp`` with real MCP servers (a stdio subprocess and streamable HTTP).

The installed executable; the offline scripted model, or the real anthropic SDK against the fake API.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil

from tests.fakes import FakeAnthropicServer, text_reply, tool_use_reply
from tests.fakes.anthropic_server import unmarked
from tests.fakes.mcp_servers import SCRIPT, HttpMcpServer, declare_user_servers, stdio_entry
from tests.forked import run_swarm

PLAYBOOK = r"""
[[rules]]
match = 'useservers'
[[rules.steps]]
tool_calls = [{ name = "mcp__st__echo", input = { text = "from-run" } }]
[[rules.steps]]
tool_calls = [{ name = "mcp__web__echo", input = { text = "from-run" } }]
[[rules.steps]]
text = "used both"

[[rules]]
match = 'delegate'
[[rules.steps]]
tool_calls = [{ name = "Agent", input = { description = "mcp job", prompt = "childwork", subagent_type = "mcpuser" } }]
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "p=$(grep -o 'child-own pid=[0-9]*' own.log | cut -d= -f2); s=$(cut -d' ' -f3 /proc/$p/stat 2>/dev/null); if [ -n \"$p\" ] && { [ -z \"$s\" ] || [ \"$s\" = Z ]; }; then echo GONE > verdict; else echo ALIVE > verdict; fi" } }]
[[rules.steps]]
tool_calls = [{ name = "mcp__st__echo", input = { text = "parent-after-child" } }]
[[rules.steps]]
text = "delegated"

[[rules]]
match = 'childwork'
[[rules.steps]]
tool_calls = [{ name = "mcp__own__echo", input = { text = "child-own" } }]
[[rules.steps]]
tool_calls = [{ name = "mcp__st__echo", input = { text = "child-shared" } }]
[[rules.steps]]
text = "child done"
"""


def _swarm(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_swarm(args, cwd=cwd, env=env, timeout=120)


def _servers(tmp_path: Path, mcp_http: HttpMcpServer) -> Path:
    log = tmp_path / "st.log"
    declare_user_servers({"st": stdio_entry("st", log), "web": {"type": "http", "url": mcp_http.url}})
    (tmp_path / "play.toml").write_text(PLAYBOOK)
    return log


def test_swarm_run_p_reaches_a_stdio_and_an_http_server(tmp_path: Path, mcp_http: HttpMcpServer) -> None:
    log = _servers(tmp_path, mcp_http)
    result = _swarm(tmp_path, "run", "-p", "useservers", "--playbook", str(tmp_path / "play.toml"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "used both"
    assert "echo from-run" in log.read_text() and "echo from-run" in mcp_http.log.read_text()


def test_a_subagent_gets_a_named_server_shared_and_an_inline_one_that_ends_with_it(
        tmp_path: Path, mcp_http: HttpMcpServer) -> None:
    log = _servers(tmp_path, mcp_http)
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "mcpuser.md").write_text(
        "---\ndescription: uses MCP\nmcpServers:\n  - st\n  - own:\n"
        f"      command: {sys.executable}\n      args: [{json.dumps(str(SCRIPT))}]\n"
        f"      env: {{MCP_TEST_TAG: own, MCP_TEST_LOG: {json.dumps(str(tmp_path / 'own.log'))}}}\n"
        "requiredMcpServers: [own]\n---\nYou use MCP tools.\n")
    result = _swarm(tmp_path, "run", "-p", "delegate", "--playbook", str(tmp_path / "play.toml"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "delegated"
    own = (tmp_path / "own.log").read_text()
    assert "echo child-own" in own
    # the inline server was gone once the subagent returned, while the run went on
    assert (tmp_path / "verdict").read_text().strip() == "GONE"
    assert not psutil.pid_exists(int(own.split("pid=")[1].split()[0]))
    # the named one is the parent's connection: the child used it, and it outlived the child
    calls = log.read_text()
    assert "echo child-shared" in calls and "echo parent-after-child" in calls
    assert len({line.split("pid=")[1] for line in calls.splitlines()}) == 1


def test_a_required_server_that_is_not_there_fails_the_subagent_with_a_clear_error(
        tmp_path: Path, mcp_http: HttpMcpServer) -> None:
    _servers(tmp_path, mcp_http)
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "needy.md").write_text("---\ndescription: needs db\nrequiredMcpServers: [db]\n---\nbody\n")
    result = _swarm(tmp_path, "run", "-p", "go", "--agent", "needy", "--playbook", str(tmp_path / "play.toml"))
    assert result.returncode != 0
    assert "requires MCP server db, which is not configured" in result.stderr


def test_the_real_sdk_sees_the_servers_schemas_and_the_same_tools_on_every_request(
        tmp_path: Path, mcp_http: HttpMcpServer, api: FakeAnthropicServer) -> None:
    _servers(tmp_path, mcp_http)
    api.enqueue(tool_use_reply("mcp__web__add", {"a": 2, "b": 3}), text_reply("five"))
    result = _swarm(tmp_path, "run", "-p", "add", env={**os.environ, "ANTHROPIC_API_KEY": "k",
                                                        "ANTHROPIC_BASE_URL": api.base_url})
    assert result.returncode == 0, result.stderr
    first, second = (unmarked(r.body) for r in api.requests)
    assert first["tools"] == second["tools"]
    add = next(t for t in first["tools"] if t["name"] == "mcp__web__add")
    assert add["description"] == "Add two numbers." and add["input_schema"]["required"] == ["a", "b"]
    mcp_names = [t["name"] for t in first["tools"] if t["name"].startswith("mcp__")]
    assert mcp_names == sorted(mcp_names) and len(mcp_names) == 12
    assert second["messages"][-1]["content"][0]["content"] == "5"


def test_mcp_list_json_shows_each_server_and_a_project_server_waits_for_approval(
        tmp_path: Path, mcp_http: HttpMcpServer) -> None:
    _servers(tmp_path, mcp_http)
    marker = tmp_path / "planted-ran"
    planted = {"command": "sh", "args": ["-c", f"touch {marker}; exec {sys.executable} {SCRIPT}"]}
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"planted": planted}}))
    listed = _swarm(tmp_path, "mcp", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {s["name"]: s for s in json.loads(listed.stdout)}
    assert {n: (s["scope"], s["state"], s["tool_count"]) for n, s in rows.items()} == {
        "st": ("user", "connected", 6), "web": ("user", "connected", 6), "planted": ("project", "needs approval", 0)}
    assert not marker.exists()  # listed, never started

    approved = _swarm(tmp_path, "mcp", "approve", "planted")
    assert approved.returncode == 0 and "approved MCP server planted" in approved.stdout
    rows = {s["name"]: s for s in json.loads(_swarm(tmp_path, "mcp", "list", "--json").stdout)}
    assert rows["planted"]["state"] == "connected" and marker.exists()
    shown = _swarm(tmp_path, "mcp", "get", "web")
    assert shown.returncode == 0 and "mcp__web__echo" in shown.stdout and mcp_http.url in shown.stdout
    assert _swarm(tmp_path, "mcp", "approve", "st").returncode != 0  # a user server needs no approval
