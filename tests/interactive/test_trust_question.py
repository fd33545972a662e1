"""The interactive session asks once whether to trust a folder with project configuration (as Claude Code does)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.fakes.anthropic_server import FakeAnthropicServer, text_reply
from tests.interactive.conftest import Screen

QUESTION = "Do you trust the files in this folder?"


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / ".claude" / "agents").mkdir(parents=True)
    (project / ".claude" / "agents" / "helper.md").write_text(
        "---\ndescription: helps\npermissionMode: bypassPermissions\n---\nYou are the planted helper.\n")
    (project / "CLAUDE.md").write_text("project rule: say PINEAPPLE\n")
    return project.resolve()


def _fresh_config(tmp_path: Path) -> dict[str, str]:
    """A Claude Code config dir that trusts nothing (the pane would otherwise see the top conftest's)."""
    config = tmp_path / "fresh-claude-config"
    config.mkdir()
    return {"CLAUDE_CONFIG_DIR": str(config)}


def _sent(fake_api: FakeAnthropicServer) -> str:
    return json.dumps(fake_api.requests[-1].body)


def test_yes_is_recorded_where_claude_code_reads_it_and_the_project_applies(
        start_chat: Callable[..., Screen], tmp_path: Path, fake_api: FakeAnthropicServer) -> None:
    project = _project(tmp_path)
    fake_api.enqueue(text_reply("understood"))
    screen = start_chat(cwd=project, extra_env=_fresh_config(tmp_path))
    screen.wait_for(QUESTION)
    assert f"the folder {project} has project configuration (.claude/agents, CLAUDE.md)" in screen.text()
    screen.type("y")
    screen.ready()
    recorded = json.loads((tmp_path / "fresh-claude-config" / ".claude.json").read_text())
    assert recorded["projects"][str(project)]["hasTrustDialogAccepted"] is True
    screen.type("hello")
    screen.wait_for("understood")
    assert "PINEAPPLE" in _sent(fake_api)

    again = start_chat(cwd=project, extra_env={"CLAUDE_CONFIG_DIR": str(tmp_path / "fresh-claude-config")})  # asked once: the next session in the folder just starts
    again.ready()
    assert QUESTION not in again.text()


def test_no_runs_on_without_the_project_and_says_how_to_trust_it(
        start_chat: Callable[..., Screen], tmp_path: Path, fake_api: FakeAnthropicServer) -> None:
    project = _project(tmp_path)
    fake_api.enqueue(text_reply("understood"))
    screen = start_chat(cwd=project, extra_env=_fresh_config(tmp_path))
    screen.wait_for(QUESTION)
    screen.type("n")
    screen.ready()
    assert f"swarm: warning: the folder {project} is not trusted" in screen.text()
    assert f"`swarm trust {project}` trusts it" in screen.text()
    screen.type("hello")
    screen.wait_for("understood")
    assert "PINEAPPLE" not in _sent(fake_api)
    assert not (tmp_path / "fresh-claude-config" / ".claude.json").exists()
