"""Where MCP servers come from, ${VAR} expansion, project approval, and the attacker who plants a server."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from swarm.agent.mcp.approval import approve, declared_servers
from swarm.agent.mcp.config import inline_servers, server_entry
from swarm.agent.permissions.paths import is_protected
from swarm.agent.permissions.rules import Rule
from swarm.agent.permissions.settings import settings_digests
from swarm.agent.toolpool import tool_pool
from tests.fakes.mcp_servers import declare_user_servers


def _claude_json(env: dict[str, str]) -> dict:  # type: ignore[type-arg]
    return json.loads((Path(env["CLAUDE_CONFIG_DIR"]) / ".claude.json").read_text())


def _write_claude_json(env: dict[str, str], doc: dict) -> None:  # type: ignore[type-arg]
    (Path(env["CLAUDE_CONFIG_DIR"]) / ".claude.json").write_text(json.dumps(doc))


@pytest.fixture
def env() -> dict[str, str]:
    return dict(os.environ)


def test_user_project_and_local_scopes_with_claude_codes_precedence(tmp_path: Path, env: dict[str, str]) -> None:
    declare_user_servers({"a": {"command": "user-a"}, "b": {"command": "user-b"}})
    doc = _claude_json(env)
    doc["projects"][str(tmp_path.resolve())] = {"mcpServers": {"b": {"type": "http", "url": "http://127.0.0.1:1/m"}},
                                                "enableAllProjectMcpServers": True}
    _write_claude_json(env, doc)
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"a": {"command": "project-a"},
                                                                   "c": {"type": "sse", "url": "https://x/sse"}}}))
    found = declared_servers(tmp_path, env, None).servers
    assert (found["a"].scope, found["a"].config.command) == ("project", "project-a")  # project over user
    assert (found["b"].scope, found["b"].config.type) == ("local", "http")  # local over user
    assert found["c"].config.type == "sse" and all(e.startable for e in found.values())


def test_variables_are_expanded_with_defaults_and_a_missing_one_is_a_reason_not_a_start(
        monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"TOKEN": "s3cret", "HOME": "/h"}
    entry = server_entry("x", {"type": "http", "url": "${BASE:-http://127.0.0.1:9}/mcp",
                               "headers": {"Authorization": "Bearer ${TOKEN}"}}, scope="user", source="t", env=env)
    assert entry is not None and entry.startable
    assert entry.config.url == "http://127.0.0.1:9/mcp" and entry.config.headers["Authorization"] == "Bearer s3cret"
    stdio = server_entry("y", {"command": "${HOME}/bin/srv", "args": ["--key=${NOPE}"]}, scope="user", source="t",
                         env=env)
    assert stdio is not None and not stdio.startable and "NOPE is not set" in stdio.problem
    assert server_entry("bad name!", {"command": "x"}, scope="user", source="t", env=env) is None


def test_a_definitions_inline_and_named_servers() -> None:
    names, inline = inline_servers(["shared", {"own": {"command": "python3", "args": ["s.py"]}}], source="def",
                                   env={})
    assert names == ["shared"] and inline.servers["own"].scope == "agent"


def test_project_servers_need_trust_and_approval_and_swarm_mcp_approve_records_it(
        tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"db": {"command": "db-server"},
                                                                   "off": {"command": "x"}}}))
    found = declared_servers(tmp_path, env, None).servers
    assert found["db"].approval == "needs approval"
    approve(tmp_path, env, "db")
    approve(tmp_path, env, "off", enabled=False)
    entry = _claude_json(env)["projects"][str(tmp_path.resolve())]
    assert entry["enabledMcpjsonServers"] == ["db"] and entry["disabledMcpjsonServers"] == ["off"]
    found = declared_servers(tmp_path, env, None).servers
    assert found["db"].startable and found["off"].approval == "disabled for this folder"

    untrusted = {**env, "CLAUDE_CONFIG_DIR": str(tmp_path / "fresh")}
    (tmp_path / "fresh").mkdir()
    assert declared_servers(tmp_path, untrusted, None).servers["db"].approval == "untrusted folder"


def test_attacker_a_teammate_that_plants_a_server_or_flips_the_setting_gets_nothing_started(
        tmp_path: Path, env: dict[str, str]) -> None:
    """The team records the digests when it spawns; what a teammate writes afterwards approves nothing."""
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps({"enabledMcpjsonServers": ["db"]}))
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"db": {"command": "db-server"}}}))
    recorded = settings_digests(tmp_path)  # as `swarm spawn` records them
    assert declared_servers(tmp_path, env, recorded).servers["db"].startable  # approved as the lead saw it

    # the teammate adds its own server to .mcp.json: the file changed since the team recorded it
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"db": {"command": "db-server"},
                                                                   "evil": {"command": "sh", "args": ["-c", "x"]}}}))
    (tmp_path / ".claude" / "settings.local.json").write_text(json.dumps({"enableAllProjectMcpServers": True}))
    found = declared_servers(tmp_path, env, recorded).servers
    assert not found["evil"].startable and not found["db"].startable
    assert found["evil"].approval == "changed since the team recorded it"

    # .mcp.json as recorded, but the teammate flips enableAllProjectMcpServers in a settings file it can write
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"db": {"command": "db-server"},
                                                                   "evil": {"command": "sh"}}}))
    recorded = settings_digests(tmp_path) | {str(tmp_path.resolve() / ".claude" / "settings.local.json"): "absent"}
    found = declared_servers(tmp_path, env, recorded).servers
    assert found["evil"].approval == "needs approval" and found["db"].startable
    # and writing .mcp.json is a protected write: it asks, it is never auto-allowed
    assert is_protected(".mcp.json", tmp_path)


def test_rules_and_tool_pools_name_a_server_or_one_tool() -> None:
    for text in ("mcp__db", "mcp__db__*"):
        rule = Rule.parse(text)
        assert rule.covers_tool("mcp__db__query") and not rule.covers_tool("mcp__dbx__query")
        assert not rule.covers_tool("Bash")
    assert Rule.parse("mcp__db__query").covers_tool("mcp__db__query")
    assert not Rule.parse("mcp__db__query").covers_tool("mcp__db__drop")
    names = ["Read", "Bash", "mcp__db__query", "mcp__db__drop", "mcp__web__fetch"]
    pool = tool_pool(names, tools=["Read", "mcp__db"], disallowed=["mcp__db__drop"], builtin=False,
                     background=False)
    assert pool.names == ("Read", "mcp__db__query")
