"""Real MCP servers (stdio subprocess, streamable HTTP) through ``McpConnections`` and the agent loop.

The loop talks to the fake Messages API through the real anthropic SDK, so what is checked is what the
API would receive: the tools part of each request, and each tool result.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from swarm.agent.conversation import Conversation
from swarm.agent.loop import AgentSpec, run_agent
from swarm.agent.mcp.config import server_entry
from swarm.agent.mcp.connections import McpConnections
from swarm.agent.mcp.tools import LiveTools, McpInput, McpToolset
from swarm.agent.tool_api.context import AgentIdentity, ToolContext, TurnState
from swarm.agent.tool_api.context import ToolError
from swarm.agent.tools import core_tools
from swarm.models.anthropic_provider import AnthropicProvider
from tests.backends.helpers import retry_until
from tests.fakes import FakeAnthropicServer, text_reply, tool_use_reply
from tests.fakes.anthropic_server import unmarked
from tests.fakes.mcp_servers import HttpMcpServer, stdio_entry


def _entry(name: str, config: dict) -> object:  # type: ignore[type-arg]
    return server_entry(name, config, scope="user", source="test", env=dict(os.environ))


@pytest.fixture(scope="module")
def servers(mcp_http: HttpMcpServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpConnections]:
    """A stdio server ``st`` and the session's HTTP server ``web``, connected once for the module."""
    log = tmp_path_factory.mktemp("mcp-stdio") / "calls.log"
    connections = McpConnections(Path.cwd(), dict(os.environ))
    connections.start([_entry("st", stdio_entry("st", log)),  # type: ignore[list-item]
                       _entry("web", {"type": "http", "url": mcp_http.url})])  # type: ignore[list-item]
    connections.wait(timeout=60)
    yield connections
    connections.close()


def _ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(AgentIdentity(cwd=tmp_path), turn=TurnState(cancel=threading.Event()))


def test_both_transports_connect_and_their_tools_are_named_described_and_sorted(servers: McpConnections) -> None:
    assert {(s.name, s.state, len(s.tools)) for s in servers.statuses()} == {("st", "connected", 6),
                                                                            ("web", "connected", 6)}
    tools = McpToolset(servers).tools()
    names = [t.name for t in tools]
    assert names == sorted(names) and "mcp__st__echo" in names and "mcp__web__add" in names
    add = next(t for t in tools if t.name == "mcp__web__add").spec()
    assert add.description == "Add two numbers."
    assert add.input_schema["type"] == "object" and set(add.input_schema["required"]) == {"a", "b"}
    assert not any(t.read_only for t in tools)  # MCP tools ask unless a rule allows them


def test_results_text_image_and_errors(servers: McpConnections, tmp_path: Path) -> None:
    by = {t.name: t for t in McpToolset(servers).tools()}
    assert by["mcp__web__echo"].run(McpInput.model_validate({"text": "hi"}), _ctx(tmp_path)) == "web: hi"
    [image] = by["mcp__st__picture"].run(McpInput(), _ctx(tmp_path))  # type: ignore[misc]
    assert image.type == "image" and image.source.media_type == "image/png"
    with pytest.raises(ToolError, match="fail"):
        by["mcp__st__fail"].run(McpInput(), _ctx(tmp_path))
    with pytest.raises(ToolError, match="validation error|Error executing"):  # the server validates the input
        by["mcp__st__add"].run(McpInput.model_validate({"a": "x"}), _ctx(tmp_path))


def test_through_the_loop_the_tools_part_is_byte_stable_and_results_reach_the_model(
        servers: McpConnections, tmp_path: Path, api: FakeAnthropicServer, claude: AnthropicProvider) -> None:
    api.enqueue(tool_use_reply("mcp__st__echo", {"text": "ping"}, tool_id="toolu_1"),
                tool_use_reply("mcp__web__fail", {}, tool_id="toolu_2"),
                text_reply("done"))
    tools = LiveTools(core_tools(), McpToolset(servers), lambda _name: True)
    conversation = Conversation()
    conversation.add_user_text("go")
    run = run_agent(AgentSpec(provider=claude, tools=tools), conversation, _ctx(tmp_path))
    assert run.ok and run.text == "done"
    bodies = [unmarked(r.body) for r in api.requests]
    assert bodies[0]["tools"] == bodies[1]["tools"] == bodies[2]["tools"]
    names = [t["name"] for t in bodies[0]["tools"]]
    assert names[:6] == [t.name for t in core_tools()] and names[6:] == sorted(names[6:])
    first = bodies[1]["messages"][-1]["content"][0]
    assert first["content"] == "st: ping" and not first.get("is_error")
    second = bodies[2]["messages"][-1]["content"][0]
    assert second["is_error"] is True


def test_a_server_that_connects_late_joins_at_the_next_turn_only(
        tmp_path: Path, api: FakeAnthropicServer, claude: AnthropicProvider) -> None:
    slow = {**stdio_entry("late"), "env": {"MCP_TEST_DELAY": "4", "MCP_TEST_TAG": "late"}}
    connections = McpConnections(tmp_path, dict(os.environ))
    try:
        connections.start([_entry("late", slow)])  # type: ignore[list-item]
        tools = LiveTools(core_tools(), McpToolset(connections), lambda _name: True)
        api.enqueue(tool_use_reply("Glob", {"pattern": "*"}), text_reply("turn one"), text_reply("turn two"))
        conversation = Conversation()
        conversation.add_user_text("one")
        assert run_agent(AgentSpec(provider=claude, tools=tools), conversation, _ctx(tmp_path)).ok
        connections.wait(timeout=60)
        conversation.add_user_text("two")
        assert run_agent(AgentSpec(provider=claude, tools=tools), conversation, _ctx(tmp_path)).ok
        first, second, third = ([t["name"] for t in unmarked(r.body)["tools"]] for r in api.requests)
        assert first == second and not any(n.startswith("mcp__") for n in first)
        assert third[:len(first)] == first and "mcp__late__echo" in third
    finally:
        connections.close()


def test_a_server_that_crashes_mid_run_is_reported_once_and_its_tools_answer_errors(
        tmp_path: Path, api: FakeAnthropicServer, claude: AnthropicProvider) -> None:
    notes: list[str] = []
    connections = McpConnections(tmp_path, dict(os.environ), note=notes.append)
    try:
        connections.start([_entry("fragile", stdio_entry("fragile"))])  # type: ignore[list-item]
        connections.wait(timeout=60)
        api.enqueue(tool_use_reply("mcp__fragile__crash", {}, tool_id="toolu_1"),
                    tool_use_reply("mcp__fragile__echo", {"text": "still there?"}, tool_id="toolu_2"),
                    text_reply("went on without it"))
        tools = LiveTools(core_tools(), McpToolset(connections), lambda _name: True)
        conversation = Conversation()
        conversation.add_user_text("go")
        run = run_agent(AgentSpec(provider=claude, tools=tools), conversation, _ctx(tmp_path))
        assert run.ok and run.text == "went on without it"
        crashed = unmarked(api.requests[1].body)["messages"][-1]["content"][0]
        after = unmarked(api.requests[2].body)["messages"][-1]["content"][0]
        assert crashed["is_error"] and "disconnected" in crashed["content"]
        assert after["is_error"] and "not connected" in after["content"]
        assert len({json.dumps(unmarked(r.body)["tools"]) for r in api.requests}) == 1  # a crash changes no tool
        assert len(notes) == 1 and "fragile failed" in notes[0]
        assert connections.status("fragile").state == "failed"  # type: ignore[union-attr]

        # a call after the pause starts it again (that call still answers an error); then its tools work
        connections.reconnect_after = 0
        echo = next(t for t in tools if t.name == "mcp__fragile__echo")
        with pytest.raises(ToolError, match="not connected"):
            echo.run(McpInput.model_validate({"text": "again"}), _ctx(tmp_path))
        connections.wait(timeout=60)
        assert echo.run(McpInput.model_validate({"text": "again"}), _ctx(tmp_path)) == "fragile: again"
        assert len(notes) == 1
    finally:
        connections.close()


HOLDER = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from swarm.agent.mcp.config import server_entry
    from swarm.agent.mcp.connections import McpConnections
    from swarm.agent.mcp.tools import McpInput, McpToolset
    c = McpConnections(Path.cwd(), dict(os.environ))
    c.start([server_entry("st", {"command": sys.executable, "args": [sys.argv[1]]}, scope="user", source="t",
                          env=dict(os.environ))])
    c.wait(timeout=60)
    pid = next(t for t in McpToolset(c).tools() if t.name == "mcp__st__pid").run(McpInput(), None)
    print(pid, flush=True)
    if sys.argv[2] == "close":
        c.close()
        print("closed", flush=True)
    time.sleep(300)
""")


@pytest.mark.parametrize("how", ["close", "kill -9"])
def test_no_server_process_outlives_a_close_or_a_kill_9_of_its_owner(how: str, tmp_path: Path) -> None:
    from tests.fakes.mcp_servers import SCRIPT

    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(SCRIPT), "close" if how == "close" else "hold"],
                              stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        assert holder.stdout is not None
        server = int(holder.stdout.readline())
        assert psutil.pid_exists(server)
        if how == "close":
            assert holder.stdout.readline().strip() == "closed"
        else:
            os.kill(holder.pid, signal.SIGKILL)
        retry_until(lambda: not psutil.pid_exists(server) or psutil.Process(server).status() == "zombie", 15,
                    what="the MCP server to end")
    finally:
        holder.kill()
        holder.wait()


def test_a_definitions_tools_and_disallowed_tools_cut_mcp_tools_by_server_or_by_name(
        servers: McpConnections, tmp_path: Path) -> None:
    from swarm.agent.assembly import Catalogs, Parent, Seat, assemble
    from swarm.agent.definitions import AgentDefinition

    definition = AgentDefinition(name="db-reader", source="project", tools=["Read", "mcp__st"],
                                 disallowed_tools=["mcp__st__crash"])
    agent = assemble(definition, Seat(role="subagent", cwd=tmp_path, env={}, skills=Catalogs.empty().skills),
                     Parent(model=None, write_roots=None), tools=core_tools(), mcp=McpToolset(servers))
    assert [t.name for t in agent.tools] == ["Read", "mcp__st__add", "mcp__st__echo", "mcp__st__fail",
                                              "mcp__st__picture", "mcp__st__pid"]
    everything = assemble(None, Seat(role="main", cwd=tmp_path, env={}, skills=Catalogs.empty().skills),
                          Parent(model=None, write_roots=None), tools=core_tools(), mcp=McpToolset(servers))
    assert len([t for t in everything.tools if t.name.startswith("mcp__")]) == 12


def test_an_sse_server_with_headers(tmp_path: Path) -> None:
    server = HttpMcpServer(tmp_path / "sse.log", transport="sse").start()
    connections = McpConnections(tmp_path, {"TOKEN": "t0k"})
    try:
        connections.start([server_entry("old", {"type": "sse", "url": server.url,  # type: ignore[list-item]
                                                 "headers": {"X-Token": "${TOKEN}"}}, scope="user", source="t",
                                        env={"TOKEN": "t0k"})])
        connections.wait(timeout=60)
        echo = next(t for t in McpToolset(connections).tools() if t.name == "mcp__old__echo")
        assert echo.run(McpInput.model_validate({"text": "hi"}), _ctx(tmp_path)) == "web: hi"
    finally:
        connections.close()
        server.stop()
