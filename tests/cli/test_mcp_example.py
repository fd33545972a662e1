"""``teams.example/mcp``: a Claude Code project's ``.mcp.json`` (a stdio server written with the ``mcp`` SDK) and
``.claude/`` (settings approving it, allowing its tools, and hooks matching ``mcp__notes__...``) copied into a
sample repository work unchanged under ``swarm run -p``, offline on the example's playbook."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from swarm.agent.transcript import Transcript
from swarm.runtime.sample_repo import make_sample_repo
from tests.forked import run_swarm

EXAMPLE = Path(__file__).resolve().parents[2] / "teams.example" / "mcp"


def _project(tmp_path: Path) -> Path:
    repo = make_sample_repo(tmp_path / "repo")
    shutil.copytree(EXAMPLE / "claude", repo / ".claude", dirs_exist_ok=True)
    shutil.copy(EXAMPLE / "mcp.json", repo / ".mcp.json")
    return repo


def _run(repo: Path, transcript: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"} | {"MCP_PYTHON": sys.executable, **extra}
    return run_swarm(["run", "--cwd", str(repo), "--playbook", str(EXAMPLE / "lead.toml"), "--transcript",
                      str(transcript), "-p", "take notes"], env=env, timeout=90)


def test_the_mcp_example_server_is_approved_called_and_its_hooks_react(tmp_path: Path) -> None:
    repo = _project(tmp_path)
    transcript = tmp_path / "run.jsonl"
    result = _run(repo, transcript)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Noted: 1. shout()")
    # the server wrote its file in the project; the password never reached it
    assert json.loads((repo / ".notes.json").read_text()) == ["shout() upper-cases its input"]
    results = [b for m in Transcript(transcript).messages() for b in m.content if b.type == "tool_result"]
    assert results[0].is_error and "Blocked by the project's no-secrets hook" in results[0].text()
    assert "saved note 1" in results[1].text()
    assert "notes-log hook: mcp__notes__add_note logged" in results[1].text()  # PostToolUse's additionalContext
    assert "1. shout() upper-cases its input" in results[2].text()
    logged = (repo / ".notes-activity.log").read_text().splitlines()
    assert [line.split()[0] for line in logged] == ["mcp__notes__add_note", "mcp__notes__list_notes"]


def test_without_the_projects_approval_the_server_does_not_start(tmp_path: Path) -> None:
    repo = _project(tmp_path)
    settings = json.loads((repo / ".claude" / "settings.json").read_text())
    del settings["enabledMcpjsonServers"]
    (repo / ".claude" / "settings.json").write_text(json.dumps(settings))
    transcript = tmp_path / "run.jsonl"
    result = _run(repo, transcript)
    assert result.returncode == 0, result.stderr
    assert not (repo / ".notes.json").exists()  # the example's approval is what starts it
    results = [b for m in Transcript(transcript).messages() for b in m.content if b.type == "tool_result"]
    assert results[1].is_error and "saved note" not in results[1].text()
