"""`swarm demo`, the README's first command, as a user runs it: installed executable, no API key."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from swarm.agent.transcript import Transcript
from swarm.core.home import Home
from swarm.models.messages import ToolResultBlock, ToolUseBlock
from swarm.runtime.demo import DEMO_TEAM
from tests.cli.conftest import SWARM_EXE
from tests.forked import run_swarm


def _demo(*args: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(env_extra or {})
    return run_swarm(["demo", *args], env=env, timeout=180)


def test_demo_runs_offline_and_cleans_up() -> None:
    result = _demo("--backend", "subprocess")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "implementer → tester: slugify is committed on branch swarm/feature/implementer" in out
    assert "tester → implementer: tests pass for slugify" in out
    assert "approved by policy:Bash(git add:*) + Bash(git commit:*)" in out
    assert "tester → lead: slugify verified" in out
    assert re.search(r"swarm/feature/tester: 2 commit\(s\) ahead", out)
    assert "ok: settled" in out
    # the lead is a model: it wrote the task list, the teammates claimed and finished it, it shut them down
    assert "#1 Implement slugify() in text_utils.py — completed by implementer" in out
    assert "#2 Test slugify() with test_slugify.py (after 1) — completed by tester" in out
    assert "the lead's last word: Done: slugify() is in text_utils.py" in out
    assert "implementer: stopped" in out and "tester: stopped" in out
    # the work ends on the repository's branch, through the merge queue, the tester's test run after each merge
    assert re.search(r"merged into (main|master) through the merge queue", out)
    assert "swarm/feature/implementer: merged" in out and "swarm/feature/tester: merged" in out
    [root] = re.findall(r"cleaned up (\S+)", out)
    assert not Path(root).exists()


def test_the_demos_tester_runs_its_forked_skill_in_a_subagent() -> None:
    result = _demo("--backend", "subprocess", "--keep")
    kept = Path(re.findall(r"kept: (\S+) ", result.stdout)[0]) if "kept: " in result.stdout else None
    try:
        assert result.returncode == 0, result.stderr
        assert kept is not None
        tester = Transcript(Home(kept / "home").transcript_path(DEMO_TEAM, "tester"))
        [call] = [b for m in tester.messages() for b in m.content if isinstance(b, ToolUseBlock) and b.name == "Skill"]
        [answer] = [b for m in tester.messages() for b in m.content
                    if isinstance(b, ToolResultBlock) and b.tool_use_id == call.id]
        assert not answer.is_error
        assert answer.content == "Skill run-tests ran in a separate context and returned: tests: pass"
        [link] = tester.events("subagent")
        assert link["description"] == "skill run-tests"
        child = Transcript(Path(link["transcript"])).messages()
        assert child[0].text().startswith("Base directory for this skill: ")  # the body, alone
        ran = [b for m in child for b in m.content if isinstance(b, ToolResultBlock)]
        assert [r.content for r in ran] == ["slugify tests pass"] and child[-1].text() == "tests: pass"
    finally:
        if kept is not None:
            shutil.rmtree(kept, ignore_errors=True)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_demo_on_tmux_json_report_and_keep(tmp_path: Path) -> None:
    socket = "swarm-test-demo"
    try:
        result = _demo("--backend", "tmux", "--json", "--keep", env_extra={"SWARM_TMUX_SOCKET": socket})
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout[: result.stdout.rindex("}") + 1])
        assert report["ok"] is True and report["reason"] == "settled"
        assert [(t["id"], t["status"], t["owner"]) for t in report["tasks"]] == [
            ("1", "completed", "implementer"), ("2", "completed", "tester")]
        assert sorted((w["teammate"], w["ahead"]) for w in report["worktrees"]) == [("implementer", 1), ("tester", 2)]
        kept = Path(re.findall(r"kept: (\S+) ", result.stdout)[0])
        assert (kept / "repo" / ".swarm" / "worktrees" / "feature" / "tester" / "test_slugify.py").exists()
        panes = subprocess.run(["tmux", "-L", socket, "list-panes", "-a"], capture_output=True, text=True)
        assert panes.stdout.strip() == ""
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)
        for found in Path(os.environ.get("TMPDIR", "/tmp")).glob("swarm-demo-*"):
            if (found / "home").exists() and str(found) in result.stdout:
                shutil.rmtree(found, ignore_errors=True)


def test_ctrl_c_mid_demo_leaves_nothing_behind() -> None:
    import signal

    import psutil

    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    proc = subprocess.Popen([str(SWARM_EXE), "demo", "--backend", "subprocess"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = ""
        while "asked to run" not in line:  # the team is up and working
            line = proc.stdout.readline()
            assert line, "the demo ended before its team started working"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    # the team is stopped through the handshake, the account says so, and everything is removed
    assert proc.returncode == 1, err
    assert "NOT ok: interrupted" in out
    assert "implementer: approved" in out and "tester: approved" in out
    [root] = re.findall(r"cleaned up (\S+)", out)
    assert not Path(root).exists()
    leftovers = [p for p in psutil.process_iter(["cmdline"]) if root in " ".join(p.info["cmdline"] or [])]
    assert leftovers == []
