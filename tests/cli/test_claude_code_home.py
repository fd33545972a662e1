"""swarm on a home in Claude Code's exact shapes: its members, tombstones, file modes and frames.

The home is written here as Claude Code 2.1.328 writes it (spec/CLAUDE_CODE.md): 2-space JSON,
mode 0644, members without pids (in-process, and a tmux pane teammate whose pane is real on
this test's private tmux server), a `<team>.deleted-<uuid>` tombstone, and a permission request
from a Claude Code teammate in the lead's inbox (no swarm marker on the entry).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from swarm.core.home import Home

TEAM = "session-1a2b3c4d"
T = "2026-12-01T10:00:00.000Z"
Run = Callable[..., subprocess.CompletedProcess[str]]

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def _write(path: Path, doc: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2))
    path.chmod(0o644)


def _member(name: str, **extra: Any) -> dict[str, Any]:
    return {"agentId": f"{name}@{TEAM}", "name": name, "agentType": "general-purpose", "joinedAt": 1764580000000,
            "cwd": "/tmp", "subscriptions": [], **extra}


@pytest.fixture
def pane() -> Iterator[str]:
    """A live pane on the default tmux server of this test (TMUX_TMPDIR is a tmp dir: see tests/conftest.py)."""
    subprocess.run(["tmux", "new-session", "-d", "-s", "cc", "sleep 120"], check=True)
    found = subprocess.run(["tmux", "list-panes", "-a", "-F", "#{pane_id}"], capture_output=True, text=True,
                           check=True).stdout.split()
    yield found[0]
    subprocess.run(["tmux", "kill-server"], capture_output=True, check=False)


@pytest.fixture
def cc_home(home: Home, pane: str) -> Home:
    team_dir = home.teams_dir / TEAM
    _write(team_dir / "config.json", {
        "name": TEAM, "createdAt": 1764580000000, "leadAgentId": f"team-lead@{TEAM}", "leadSessionId": "s-1",
        "members": [
            _member("team-lead", agentType="team-lead", tmuxPaneId="leader", backendType="in-process"),
            _member("researcher", tmuxPaneId="in-process", backendType="in-process"),
            _member("coder", tmuxPaneId=pane, backendType="tmux", isActive=False, color="blue"),
        ]})
    request = {"type": "permission_request", "request_id": "perm-1764580000000-abc123", "agent_id": f"coder@{TEAM}",
               "tool_name": "Bash", "tool_use_id": "toolu_01", "description": "run: npm test",
               "input": {"command": "npm test"},
               "permission_suggestions": [{"type": "addDirectories", "directories": ["/tmp/x"],
                                           "destination": "session"}]}
    _write(team_dir / "inboxes" / "team-lead.json", [{
        "from": "coder", "text": json.dumps(request), "summary": "permission", "timestamp": T, "color": "blue",
        "msgV": 1, "msg_id": "6f1c2a4e-0000-4000-8000-000000000001", "type": "message", "read": False}])
    _write(team_dir / "inboxes" / "coder.json", [])
    _write(home.teams_dir / f"{TEAM}.deleted-0b9c7e1d-1111-4222-8333-444455556666" / "config.json",
           {"name": TEAM, "members": []})
    return home


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_team_list_and_show_skip_tombstones_and_read_claude_code_members(cc_home: Home, run_exe: Run) -> None:
    listed = run_exe("team", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [t["name"] for t in json.loads(listed.stdout)] == [TEAM]
    shown = run_exe("team", "show", TEAM, "--json")
    assert shown.returncode == 0, shown.stderr
    assert [m["name"] for m in json.loads(shown.stdout)["members"]] == ["team-lead", "researcher", "coder"]


def test_status_shows_claude_code_teammates_alive_with_is_active_as_busy_or_idle(cc_home: Home, run_exe: Run,
                                                                               pane: str) -> None:
    result = run_exe("status", "--team", TEAM, "--json")
    assert result.returncode == 0, result.stderr
    states = {row["name"]: row["state"] for row in json.loads(result.stdout)}
    assert states == {"team-lead": "lead", "researcher": "idle", "coder": "idle"}
    subprocess.run(["tmux", "kill-pane", "-t", pane], check=True)  # the pane closed: now it is gone
    states = {row["name"]: row["state"] for row in json.loads(run_exe("status", "--team", TEAM, "--json").stdout)}
    assert states["coder"] == "stopped"


def test_send_keeps_claude_code_file_modes_and_style(cc_home: Home, run_exe: Run) -> None:
    inbox = cc_home.inbox_path(TEAM, "coder")
    sent = run_exe("send", "coder", "please run the tests", "--team", TEAM)
    assert sent.returncode == 0, sent.stderr
    assert _mode(inbox) == 0o644
    [entry] = json.loads(inbox.read_text())
    assert entry["text"] == "please run the tests" and entry["from"] == "team-lead"
    assert inbox.read_text().startswith('[\n  {\n    "'), "Claude Code's fresh `[]` inbox is written 2-space, as it writes"
    config = cc_home.config_path(TEAM)
    assert _mode(config) == 0o644 and config.read_text().startswith("{\n  ")


def test_a_claude_code_permission_request_shows_and_is_answered(cc_home: Home, run_exe: Run) -> None:
    pending = run_exe("permissions", "--team", TEAM, "--json")
    assert pending.returncode == 0, pending.stderr
    [request] = json.loads(pending.stdout)
    assert request["request_id"] == "perm-1764580000000-abc123" and request["agent"] == "coder"
    assert request["tool"] == "Bash" and request["input"] == {"command": "npm test"}
    approved = run_exe("approve", "perm-1764580000000-abc123", "--team", TEAM)
    assert approved.returncode == 0, approved.stderr
    [answer] = json.loads(cc_home.inbox_path(TEAM, "coder").read_text())
    frame = json.loads(answer["text"])
    assert frame["type"] == "permission_response" and frame["request_id"] == "perm-1764580000000-abc123"
    assert frame["subtype"] == "success"
    assert json.loads(run_exe("permissions", "--team", TEAM, "--json").stdout) == []
    assert os.stat(cc_home.inbox_path(TEAM, "coder")).st_mode & 0o777 == 0o644
