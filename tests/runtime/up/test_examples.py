"""Every example team runs headless and offline: ``swarm up teams.example/X/team.toml --headless --json``.

Each run happens in a fresh sample repository with the installed executable,
no API key (the members run on their playbooks) and a private tmux socket. The
JSON report must show the work the playbooks do through the real tools: the
messages that reached the lead, the decisions the lead policy took, the
worktrees that were kept, and git in the repository must agree.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from swarm.runtime.sample_repo import examples_dir
from tests.runtime.up.helpers import EXAMPLES, Up, panes, teammate_pids

pytestmark = pytest.mark.usefixtures("served")  # teammates forked from the home's CLI server (tests.zygote)


def _headless(up: Up, example: str) -> dict[str, Any]:
    result = up.run("up", str(EXAMPLES / example / "team.toml"), "--headless", "--json")
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    report: dict[str, Any] = json.loads(result.stdout)
    assert report["ok"] is True and report["reason"] == "settled", report
    # headless stops what it started: no teammate process, no pane
    assert teammate_pids(up.home) == []
    assert panes(up.socket) == []
    return report


def _messages_to_lead(report: dict[str, Any], sender: str) -> list[str]:
    return [m["text"] for m in report["messages"] if m["sender"] == sender and m["kind"] == "message"]


def _member(report: dict[str, Any], name: str) -> dict[str, Any]:
    found = [m for m in report["members"] if m["name"] == name]
    assert len(found) == 1, report["members"]
    return found[0]


def test_every_example_has_a_test() -> None:
    """A new example team must get its expectations here too."""
    assert EXAMPLES.resolve() == examples_dir()
    teams = sorted(p.name for p in EXAMPLES.iterdir() if (p / "team.toml").is_file())
    # lead: swarm demo's team (tests/cli/test_demo.py); mixed runs Claude Code (tests/runtime/claude/)
    assert teams == ["feature", "lead", "mixed", "plan-first", "review"]


def test_review_finds_the_eval_and_the_policy_approves_git_log(up: Up) -> None:
    report = _headless(up, "review")

    assert report["team"] == "review"
    findings = _messages_to_lead(report, "security")
    assert any("text_utils.py" in text and "eval" in text for text in findings), findings
    history = _messages_to_lead(report, "history")
    assert any("Add shout, calc and a small app" in text for text in history), history  # git log really ran

    git_log = [d for d in report["decisions"] if d["agent"] == "history" and d["tool"] == "Bash"]
    assert [(d["decision"], d["by"]) for d in git_log] == [("allow", "policy:Bash(git log:*)")]
    for name in ("security", "history"):
        member = _member(report, name)
        assert member["result"] and member["failure"] is None and member["stopped"] == "approved", member
    assert report["worktrees"] == []
    assert up.git("status", "--porcelain") == ""


def test_feature_keeps_both_worktrees_with_their_commits(up: Up) -> None:
    head = up.git("rev-parse", "HEAD")
    report = _headless(up, "feature")

    trees = {t["teammate"]: t for t in report["worktrees"]}
    assert set(trees) == {"implementer", "tester"}
    assert {name: (t["state"], t["ahead"]) for name, t in trees.items()} == {
        "implementer": ("changed", 1), "tester": ("changed", 2)}, json.dumps(report, indent=1)
    for name, tree in trees.items():
        assert tree["branch"] == f"swarm/feature/{name}" and tree["base"] == head
        assert up.git("rev-list", "--count", f"{head}..{tree['branch']}") == str(tree["ahead"])
    tester_files = up.git("ls-tree", "-r", "--name-only", "swarm/feature/tester").split()
    assert "test_slugify.py" in tester_files
    assert "def slugify" in up.git("show", "swarm/feature/implementer:text_utils.py")

    verified = _messages_to_lead(report, "tester")
    assert any(text.startswith("slugify verified") for text in verified), verified
    bys = [d["by"] for d in report["decisions"] if d["decision"] == "allow"]
    assert len(bys) == len(report["decisions"]) == 4, report["decisions"]
    for rule in ("Bash(git add:*)", "Bash(git commit:*)", "Bash(git merge:*)", "Bash(python3:*)"):
        assert any(by.startswith("policy:") and rule in by for by in bys), (rule, bys)

    # the main checkout is untouched: same HEAD, nothing modified or untracked, no slugify
    assert up.git("rev-parse", "HEAD") == head
    assert up.git("status", "--porcelain") == ""
    assert "slugify" not in (up.repo / "text_utils.py").read_text()


def test_plan_first_plan_is_approved_by_the_policy(up: Up) -> None:
    report = _headless(up, "plan-first")

    plans = [d for d in report["decisions"] if d["kind"] == "plan"]
    assert [(d["agent"], d["decision"], d["by"]) for d in plans] == [("architect", "allow", "policy:plans=approve")]
    changelog = up.repo / "CHANGELOG.md"
    assert changelog.is_file() and "text_utils.shout" in changelog.read_text()
    summaries = [m["summary"] for m in report["messages"] if m["sender"] == "architect" and m["kind"] == "message"]
    assert summaries == ["changelog written"]
    assert _member(report, "architect")["result"]


def test_the_mixed_example_says_what_it_lacks_and_starts_nothing(up: Up) -> None:
    """Without claude on PATH, then without credentials: one line each, exit 2, no team made."""
    team_file = str(EXAMPLES / "mixed" / "team.toml")
    up.env["PATH"] = f"{up.tmp}:/usr/bin:/bin"
    up.env.pop("SWARM_CLAUDE_BIN", None)
    missing = up.run("up", team_file, "--headless")
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1, missing.stderr
    assert "members[1] (reviewer) runs Claude Code, but Claude Code is not installed" in missing.stderr
    fake = up.tmp / "claude"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    no_login = up.run("up", team_file, "--headless")
    assert no_login.returncode == 2 and no_login.stderr.count("\n") == 1, no_login.stderr
    assert "Claude Code has no credentials here: set ANTHROPIC_API_KEY" in no_login.stderr
    assert not (up.home / "teams" / "mixed").exists()
