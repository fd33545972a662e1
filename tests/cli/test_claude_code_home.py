"""swarm on a home in Claude Code's exact shapes: its members, tombstones, file modes and frames.

The home is written here as Claude Code 2.1.328 writes it (docs/protocol.md): 2-space JSON,
mode 0644, members without pids (in-process, and a tmux pane teammate), a `<team>.deleted-<uuid>`
tombstone, and a permission request from a Claude Code teammate in the lead's inbox (no swarm
marker on the entry). The lead is a live process with Claude Code's session record
(`sessions/<pid>.json`); as a lead outside tmux does, it has its teammate's pane on its own
server `-L claude-swarm-<lead pid>` (unrecorded in the member entry), where the pane runs a
process with the command line Claude Code gives a teammate (`--agent-id coder@<team> ...`).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from swarm.backends.procs import is_pid_alive
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
def lead() -> Iterator[subprocess.Popen[bytes]]:
    """A process standing in for the Claude Code lead: its pid names its session record and tmux server."""
    proc = subprocess.Popen(["sleep", "300"])
    yield proc
    proc.kill()
    proc.wait()


def _tmux(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=False)


def _panes(*server: str) -> dict[str, int]:
    """Pane id -> pane pid on a tmux server (the default one without arguments); empty when it is not running."""
    listed = _tmux(*server, "list-panes", "-a", "-F", "#{pane_id} #{pane_pid}").stdout.split()
    return {pane: int(pid) for pane, pid in zip(listed[::2], listed[1::2], strict=True)}


@pytest.fixture
def lead_server(lead: subprocess.Popen[bytes]) -> Iterator[list[str]]:
    """The tmux server a Claude Code lead outside tmux puts its teammates on (TMUX_TMPDIR is a tmp dir)."""
    server = ["-L", f"claude-swarm-{lead.pid}"]
    yield server
    _tmux(*server, "kill-server")


@pytest.fixture
def pane(home: Home, lead_server: list[str]) -> Iterator[str]:
    """coder's pane on its lead's server, running what Claude Code runs there (its agent id, its config dir)."""
    teammate = [sys.executable, "-c", "import time; time.sleep(300)",
                "--agent-id", f"coder@{TEAM}", "--agent-name", "coder", "--team-name", TEAM]
    started = _tmux(*lead_server, "new-session", "-d", "-s", "claude-swarm", "-e", f"CLAUDE_CONFIG_DIR={home.root}",
                    "--", *teammate)
    assert started.returncode == 0, started.stderr
    [found] = _panes(*lead_server)
    yield found
    _tmux("kill-server")  # the default server, if a test started one


@pytest.fixture
def cc_home(home: Home, pane: str, lead: subprocess.Popen[bytes]) -> Home:
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
    _write(home.root / "sessions" / f"{lead.pid}.json", {"pid": lead.pid, "sessionId": "s-1", "cwd": "/tmp",
                                                          "startedAt": 1764580000000, "procStart": _proc_start(lead.pid)})
    _write(home.teams_dir / f"{TEAM}.deleted-0b9c7e1d-1111-4222-8333-444455556666" / "config.json",
           {"name": TEAM, "members": []})
    return home


def _proc_start(pid: int) -> str:
    """What Claude Code records as ``procStart``: field 22 of ``/proc/<pid>/stat``."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rfind(")") + 2:].split(" ")[19]


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_team_list_and_show_skip_tombstones_and_read_claude_code_members(cc_home: Home, run_exe: Run) -> None:
    listed = run_exe("team", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [t["name"] for t in json.loads(listed.stdout)] == [TEAM]
    shown = run_exe("team", "show", TEAM, "--json")
    assert shown.returncode == 0, shown.stderr
    assert [m["name"] for m in json.loads(shown.stdout)["members"]] == ["team-lead", "researcher", "coder"]


def test_status_shows_claude_code_teammates_alive_with_is_active_as_busy_or_idle(
        cc_home: Home, run_exe: Run, lead_server: list[str], pane: str) -> None:
    result = run_exe("status", "--team", TEAM, "--json")
    assert result.returncode == 0, result.stderr
    states = {row["name"]: row["state"] for row in json.loads(result.stdout)}
    assert states == {"team-lead": "lead", "researcher": "idle", "coder": "idle"}
    _tmux(*lead_server, "kill-pane", "-t", pane)  # the pane closed: now it is gone
    states = {row["name"]: row["state"] for row in json.loads(run_exe("status", "--team", TEAM, "--json").stdout)}
    assert states["coder"] == "stopped"


def test_team_show_and_list_say_busy_idle_or_stopped_as_status_does(
        cc_home: Home, run_exe: Run, lead_server: list[str], pane: str) -> None:
    def shown() -> dict[str, str]:
        result = run_exe("team", "show", TEAM)
        assert result.returncode == 0, result.stderr
        return {line.split()[0]: line.split()[4] for line in result.stdout.splitlines()[2:]}

    assert shown() == {"team-lead": "lead", "researcher": "idle", "coder": "idle"}  # isActive false: idle
    [row] = [line.split() for line in run_exe("team", "list").stdout.splitlines() if line.startswith(TEAM)]
    assert row[1:3] == ["3", "2"], "members, running"
    _tmux(*lead_server, "kill-pane", "-t", pane)
    assert shown()["coder"] == "stopped"


def test_in_process_teammates_are_gone_once_their_lead_is(cc_home: Home, run_exe: Run,
                                                          lead: subprocess.Popen[bytes]) -> None:
    lead.kill()
    lead.wait()  # the lead died without removing its session record (a crash)
    states = {row["name"]: row["state"] for row in json.loads(run_exe("status", "--team", TEAM, "--json").stdout)}
    assert states["researcher"] == "stopped", "an in-process teammate outlived its lead"
    assert states["coder"] == "idle", "a pane teammate runs on by itself"


def test_shutdown_stops_the_teammate_on_its_leads_server_never_the_users_pane(
        cc_home: Home, run_exe: Run, lead_server: list[str], pane: str) -> None:
    _tmux("new-session", "-d", "-s", "mine", "sleep 300")  # the user's own tmux, outside the team
    users = _panes()
    assert list(users) == [pane] == ["%0"], "both servers number their first pane %0"
    teammate = _panes(*lead_server)[pane]
    done = run_exe("shutdown", "coder", "--team", TEAM, "--timeout", "1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("coder: killed"), done.stdout
    assert _panes() == users, "swarm killed the user's own pane"
    assert pane not in _panes(*lead_server) and not is_pid_alive(teammate), "the teammate's pane is still there"
    [coder] = [m for m in json.loads(cc_home.config_path(TEAM).read_text())["members"] if m["name"] == "coder"]
    assert coder["status"] == "killed"


def test_a_teammate_swarm_cannot_find_is_neither_killed_nor_marked(
        cc_home: Home, run_exe: Run, lead_server: list[str]) -> None:
    _tmux(*lead_server, "kill-server")  # the teammate went; a pane with its id is now only the user's
    _tmux("new-session", "-d", "-s", "mine", "sleep 300")
    users = _panes()
    done = run_exe("shutdown", "coder", "--team", TEAM, "--timeout", "1")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("coder: not_running"), done.stdout
    assert _panes() == users, "swarm killed a pane it had not proven to be the teammate's"
    [coder] = [m for m in json.loads(cc_home.config_path(TEAM).read_text())["members"] if m["name"] == "coder"]
    assert coder.get("status") != "killed", "swarm recorded a kill it did not do"


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


SUGGESTION = {"type": "addDirectories", "directories": ["/tmp/x"], "destination": "session"}
"""The suggestion object the Claude Code teammate's request in ``cc_home`` carries."""


def test_a_claude_code_request_is_listed_with_its_own_suggestions(cc_home: Home, run_exe: Run) -> None:
    [request] = json.loads(run_exe("permissions", "--team", TEAM, "--json").stdout)
    assert request["permission_suggestions"] == [SUGGESTION], "Claude Code's suggestion objects were not kept"


def test_always_hands_a_claude_code_teammate_its_own_suggestions(cc_home: Home, run_exe: Run) -> None:
    approved = run_exe("approve", "perm-1764580000000-abc123", "--always", "--team", TEAM)
    assert approved.returncode == 0, approved.stderr
    [answer] = json.loads(cc_home.inbox_path(TEAM, "coder").read_text())
    response = json.loads(answer["text"])["response"]
    assert response.get("permission_updates") == [SUGGESTION], "the teammate must get back what it suggested"
    [coder] = [m for m in json.loads(cc_home.config_path(TEAM).read_text())["members"] if m["name"] == "coder"]
    assert not coder.get("allowedTools"), "swarm added a rule of its own where Claude Code applies its suggestion"

