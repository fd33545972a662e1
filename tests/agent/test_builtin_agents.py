"""The built-ins beyond general-purpose, Explore and Plan, run through the real SDK and the fake Messages API:
Verification in the background with its reminder after every tool result, one-shot answers, the guide's prompt."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from swarm.agent.definitions import load_agents
from swarm.agent.subagents import FORK_TAG
from swarm.agent.verification import VERIFICATION_REMINDER
from tests.agent.subagent_helpers import PARENT, last_results, run_main, tool_names
from tests.fakes import FakeAnthropicServer, text_reply, tool_use_reply
from tests.fakes.anthropic_server import unmarked

VERIFIER = "verification specialist"
"""Text only the Verification child's requests carry (its system prompt)."""


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def small_repo(path: Path) -> Path:
    path.mkdir()
    _git(path, "init", "-q", "-b", "main")
    (path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    _git(path, "add", "calc.py")
    _git(path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "add add()")
    return path


def _texts(message: dict[str, Any]) -> list[str]:
    return [b["text"] for b in message["content"] if b.get("type") == "text"]


def test_verification_runs_in_the_background_read_only_with_its_reminder_after_every_tool_result(
        api: FakeAnthropicServer, tmp_path: Path) -> None:
    repo = small_repo(tmp_path / "repo")
    api.enqueue(tool_use_reply("Agent", {"description": "verify add", "prompt": "Check add() in calc.py.",
                                         "subagent_type": "Verification"}), when=PARENT)
    api.enqueue(text_reply("verifier started"), when=PARENT)
    api.enqueue(text_reply("noted the verdict"), when=PARENT)
    api.enqueue(tool_use_reply("Bash", {"command": "git log --oneline"}, tool_id="toolu_v1"),
                tool_use_reply("Bash", {"command": "touch FIXED.txt"}, tool_id="toolu_v2"),  # drifting into fixing
                tool_use_reply("Read", {"file_path": "calc.py"}, tool_id="toolu_v3"),
                text_reply("### Check: add\n**Command run:** git log\nVERDICT: PASS"), when=VERIFIER)
    run = run_main(api, repo, "verify my change")
    assert run.ok and run.text == "noted the verdict"
    parent = [r for r in api.requests if PARENT in json.dumps(r.body)]
    child = [r for r in api.requests if VERIFIER in json.dumps(r.body.get("system"))]
    assert "Async agent launched" in last_results(parent[1])[0]["content"]  # background, though not asked
    assert len(child) == 4 and all(tool_names(r) == ["Read", "Bash", "Glob", "Grep"] for r in child)
    assert child[0].body["model"] == "claude-parent"  # model: inherit
    system = json.dumps(child[0].body["system"])
    for words in ("Command run", "adversarial probe", "do the opposite", "VERDICT: PASS"):
        assert words in system
    reminder = f"<system-reminder>\n{VERIFICATION_REMINDER}\n</system-reminder>"
    assert reminder not in json.dumps(child[0].body["messages"])
    for request in child[1:]:  # after each tool result, the rule again, after the results
        last = request.body["messages"][-1]
        assert last["content"][0]["type"] == "tool_result" and _texts(last)[-1] == reminder
    assert "add add()" in last_results(child[1])[0]["content"]  # the real output of its read-only command
    assert last_results(child[2])[0].get("is_error") and not (repo / "FIXED.txt").exists()  # read-only, enforced
    notified = json.dumps(parent[2].body["messages"][-1])
    assert "<task-notification>" in notified and "VERDICT: PASS" in notified and "verify add" in notified


def test_explore_answers_without_agent_id_or_usage_but_general_purpose_keeps_them(
        api: FakeAnthropicServer, tmp_path: Path) -> None:
    api.enqueue(tool_use_reply("Agent", {"description": "find", "prompt": "EXPLORE JOB", "subagent_type": "Explore"},
                               tool_id="toolu_e"),
                text_reply("found it in a.py"),
                tool_use_reply("Agent", {"description": "do", "prompt": "GP JOB",
                                         "subagent_type": "general-purpose"}, tool_id="toolu_g"),
                text_reply("did it"), text_reply("done"))
    run_main(api, tmp_path)
    explore, general = last_results(api.requests[2])[0], last_results(api.requests[4])[0]
    assert explore["content"] == "found it in a.py"
    assert "agentId:" in general["content"] and "<usage>" in general["content"]


def test_any_definition_may_carry_a_critical_reminder_under_either_name(tmp_path: Path, env: dict[str, str]) -> None:
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "a.md").write_text("---\ndescription: a\ncriticalSystemReminder: Only read.\n---\nA.\n")
    (agents / "b.md").write_text("---\ndescription: b\ncriticalSystemReminder_EXPERIMENTAL: Never fix.\n---\nB.\n")
    (agents / "c.md").write_text("---\ndescription: c\ncriticalSystemReminder: [not, text]\n---\nC.\n")
    catalog = load_agents(tmp_path, env=env)
    a, b = catalog.get("a"), catalog.get("b")
    assert a is not None and a.critical_system_reminder == "Only read."
    assert b is not None and b.critical_system_reminder == "Never fix." and "criticalSystemReminder_EXPERIMENTAL" not in b.extra
    [warning] = catalog.warnings
    assert catalog.get("c") is None and "criticalSystemReminder" in warning and "use one line of text" in warning


def test_a_fork_in_a_worktree_is_told_both_paths_after_its_directive(api: FakeAnthropicServer, tmp_path: Path) -> None:
    repo = small_repo(tmp_path / "repo")
    api.enqueue(tool_use_reply("Agent", {"description": "fork it", "prompt": "FORK JOB", "isolation": "worktree"}),
                text_reply("forked done"), text_reply("ok"))
    run_main(api, repo)
    child = api.requests[1].body
    assert FORK_TAG in json.dumps(child["messages"][-1])  # a fork: the parent's conversation, then its directive
    *_, directive, notice = _texts(child["messages"][-1])
    assert directive.endswith("FORK JOB")
    trees = repo / ".swarm" / "agent-worktrees"
    assert f"parent agent working in {repo}" in notice and f"isolated git worktree at {trees}/" in notice
    assert "Re-read files before editing" in notice
    assert unmarked(child["messages"][:-2]) == unmarked(api.requests[0].body["messages"])  # the prefix is kept


def test_the_guides_prompt_is_built_from_the_persons_configuration_and_the_readme(
        api: FakeAnthropicServer, tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".claude" / "agents").mkdir(parents=True)
    (project / ".claude" / "agents" / "db-migrator.md").write_text("---\ndescription: Writes SQL migrations\n---\nM.\n")
    (project / ".claude" / "skills" / "release-notes").mkdir(parents=True)
    (project / ".claude" / "skills" / "release-notes" / "SKILL.md").write_text(
        "---\nname: release-notes\ndescription: Drafts release notes\n---\nDraft them.\n")
    (project / ".claude" / "settings.json").write_text(json.dumps(
        {"permissions": {"allow": ["Bash(ls)"]}, "hooks": {"PreToolUse": [], "SessionStart": []}}))
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"postgres-prod": {"command": "pg-mcp"}}}))
    (project / "crew.toml").write_text('[team]\nname = "crew"\n')
    api.enqueue(tool_use_reply("Agent", {"description": "how to", "prompt": "How do I add a hook?",
                                         "subagent_type": "swarm-guide"}),
                text_reply("Add it to settings."), text_reply("done"))
    run_main(api, project)
    guide = api.requests[1].body
    system = json.dumps(guide["system"])
    assert guide["model"].startswith("claude-haiku") and tool_names(api.requests[1]) == ["Read", "Glob", "Grep"]
    for fact in ("db-migrator", "Writes SQL migrations", "release-notes", "Drafts release notes", "PreToolUse",
                 "SessionStart", "postgres-prod", "crew.toml", "keys hooks, permissions"):
        assert fact in system, fact
    assert "README" in system and "## Agent definitions" in system  # the README's outline, as its reference
    assert "db-migrator" not in json.dumps(api.requests[0].body["system"])  # only the guide's prompt is built so
