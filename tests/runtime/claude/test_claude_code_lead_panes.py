"""A teammate Claude Code's own lead started, run by the real Claude Code: swarm finds it by its process.

A Claude Code lead outside tmux puts its teammates on its own tmux server ``-L
claude-swarm-<lead pid>`` and records only the pane id (``%0``), which the user's own
server numbers from ``%0`` too. Here the real ``claude`` (the pinned version) runs in
such a pane with the command line Claude Code gives a teammate (docs/protocol.md) and this
home as its config dir; the "lead" is a stand-in process with Claude Code's session
record. Claude Code renames its process (``process.title``): its argv, which swarm goes
by, must stay. swarm's status shows the teammate running, and its shutdown stops that
process and pane and leaves the user's ``%0`` alone. HOME, SWARM_HOME, CLAUDE_CONFIG_DIR
and TMUX_TMPDIR are the test's own (the top conftest).
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarm.backends.procs import is_pid_alive
from swarm.core.home import Home
from swarm.runtime.claude_teammate import seed_config
from tests.backends.helpers import retry_until
from tests.forked import run_swarm

pytestmark = pytest.mark.timeout(120)

TEAM = "session-0c0ffee0"
API_KEY = "sk-ant-api03-swarm-lead-panes-test-0123456789"


def _tmux(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=False)


def _panes(*server: str) -> dict[str, int]:
    listed = _tmux(*server, "list-panes", "-a", "-F", "#{pane_id} #{pane_pid}").stdout.split()
    return {pane: int(pid) for pane, pid in zip(listed[::2], listed[1::2], strict=True)}


@pytest.fixture
def lead() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "300"])
    yield proc
    proc.kill()
    proc.wait()


@pytest.fixture
def servers(lead: subprocess.Popen[bytes]) -> Iterator[list[str]]:
    """The lead's tmux server; the default server (the user's) is killed at teardown too."""
    server = ["-L", f"claude-swarm-{lead.pid}"]
    yield server
    for each in (server, []):
        _tmux(*each, "kill-server")


def _claude_code_home(home: Home, lead: subprocess.Popen[bytes], cwd: Path) -> None:
    """The team as Claude Code writes it: its lead's session record, coder in pane %0, 2-space, 0644."""
    def write(path: Path, doc: object) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=2))
        path.chmod(0o644)

    member = {"agentType": "general-purpose", "joinedAt": 1764580000000, "cwd": str(cwd), "subscriptions": []}
    write(home.config_path(TEAM), {
        "name": TEAM, "createdAt": 1764580000000, "leadAgentId": f"team-lead@{TEAM}", "leadSessionId": "s-1",
        "members": [{**member, "agentId": f"team-lead@{TEAM}", "name": "team-lead", "agentType": "team-lead",
                     "tmuxPaneId": "leader", "backendType": "in-process"},
                    {**member, "agentId": f"coder@{TEAM}", "name": "coder", "tmuxPaneId": "%0",
                     "backendType": "tmux", "isActive": False, "color": "blue"}]})
    write(home.inbox_path(TEAM, "coder"), [])
    stat = Path(f"/proc/{lead.pid}/stat").read_text()
    write(home.root / "sessions" / f"{lead.pid}.json",
          {"pid": lead.pid, "sessionId": "s-1", "cwd": str(cwd), "startedAt": 1764580000000,
           "procStart": stat[stat.rfind(")") + 2:].split(" ")[19]})


def test_a_real_claude_code_teammate_is_found_on_its_leads_server_and_stopped_alone(
        claude_code: Path, home: Home, tmp_path: Path, lead: subprocess.Popen[bytes], servers: list[str]) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    _claude_code_home(home, lead, cwd)
    seed_config(home.root, cwd, {"ANTHROPIC_API_KEY": API_KEY})  # no first-run dialog in a pane nobody watches
    env = [f"CLAUDE_CONFIG_DIR={home.root}", "CLAUDECODE=1", "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1",
           f"ANTHROPIC_API_KEY={API_KEY}", "ANTHROPIC_BASE_URL=http://127.0.0.1:9",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"]
    started = _tmux(*servers, "new-session", "-d", "-s", "claude-swarm", "-x", "200", "-y", "50", "-c", str(cwd),
                    *[flag for pair in env for flag in ("-e", pair)], "--",
                    str(claude_code), "--agent-id", f"coder@{TEAM}", "--agent-name", "coder", "--team-name", TEAM,
                    "--agent-color", "blue", "--parent-session-id", str(uuid.uuid4()), "--permission-mode", "default")
    assert started.returncode == 0, started.stderr
    retry_until(lambda: "@coder" in _tmux(*servers, "capture-pane", "-p", "-t", "%0").stdout, 60,
                what="the Claude Code teammate's prompt")  # it has set its title by now
    teammate = _panes(*servers)["%0"]
    _tmux("new-session", "-d", "-s", "mine", "sleep 300")  # the user's own tmux: its first pane is %0 too
    users = _panes()
    assert list(users) == ["%0"]

    def swarm(*args: str) -> subprocess.CompletedProcess[str]:
        return run_swarm([*args, "--team", TEAM], timeout=60)

    status = swarm("status", "--json")
    assert status.returncode == 0, status.stderr
    assert {row["name"]: row["state"] for row in json.loads(status.stdout)}["coder"] in ("idle", "busy")
    done = swarm("shutdown", "coder", "--timeout", "1")
    assert done.returncode == 0 and done.stdout.startswith("coder: killed"), (done.stdout, done.stderr)
    assert _panes() == users, "swarm killed the user's own pane"
    retry_until(lambda: not is_pid_alive(teammate) and "%0" not in _panes(*servers), 10,
                what="the teammate's process and pane to be gone")
