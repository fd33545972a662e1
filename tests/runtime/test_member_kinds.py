"""One member object per kind (``runtime.member_kinds``): which class judges an entry, and one answer to "running?".

The kinds are told apart from the entry as each writer leaves it; running, state and stop
are judged on real processes (``sleep`` stand-ins, a stand-in ``claude`` in a real pane,
and the real Claude Code against the fake Messages API). The live bug: a Claude Code
teammate swarm started on a tmux server named by socket name (``--tmux-socket NAME``, as
the option invites) was shown ``stopped`` by ``swarm status`` while alive and idle in its
pane — its pane was looked for on a server at a relative path ``NAME`` — and ``swarm
shutdown`` swept it as not running. HOME, SWARM_HOME, CLAUDE_CONFIG_DIR and TMUX_TMPDIR
are the test's own (the top conftest); every tmux server started here is killed.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

import swarm
from swarm.backends.procs import is_pid_alive
from swarm.core.frames import IdleNotification, entry_frame
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.names import LEAD_NAME
from swarm.core.protocol import Member, TeamFile
from swarm.core.teams import TeamStore
from swarm.errors import BackendError
from swarm.runtime.member_kinds import (
    ClaudeCodePane,
    InProcessTeammate,
    LeadsPaneTeammate,
    Machine,
    SwarmTeammate,
    TeamLead,
    member_kind,
    reap_dead,
)
from swarm.runtime.shutdown import shutdown
from swarm.runtime.spawn import SpawnRequest, spawn, wait_joined
from swarm.runtime.status import team_status
from tests.backends.helpers import retry_until
from tests.fakes import FakeAnthropicServer, text_reply
from tests.forked import run_swarm

pytestmark = [pytest.mark.timeout(180), pytest.mark.usefixtures("served")]

TEAM = "kinds"
API_KEY = "sk-ant-api03-swarm-member-kinds-test-0123456789"
STAND_IN = "#!/bin/sh\nexec sleep 120\n"
"""A ``claude`` that only sits in its pane, as an idle Claude Code teammate does."""
needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def _entry(name: str, **fields: Any) -> Member:
    """A member entry as it is read from disk (camelCase keys)."""
    return Member.model_validate({"agentId": f"{name}@{TEAM}", "name": name, **fields})


@pytest.fixture
def sleeper() -> Iterator[psutil.Process]:
    """A live process standing in for a member's recorded one; killed at teardown."""
    proc = subprocess.Popen(["sleep", "300"])
    yield psutil.Process(proc.pid)
    proc.kill()
    proc.wait()


@pytest.fixture
def socket_name() -> Iterator[str]:
    """A tmux server named by socket name (``-L``), under the test's TMUX_TMPDIR; killed at teardown."""
    name = f"kinds-{uuid.uuid4().hex[:8]}"
    yield name
    subprocess.run(["tmux", "-L", name, "kill-server"], capture_output=True, check=False)


def _panes(socket_name: str) -> list[str]:
    listed = subprocess.run(["tmux", "-L", socket_name, "list-panes", "-a", "-F", "#{pane_id}"], capture_output=True,
                            text=True, check=False)
    return listed.stdout.split()


# -- which kind --------------------------------------------------------------------------------


def test_each_entry_is_judged_by_the_class_of_its_kind() -> None:
    entries = {
        LEAD_NAME: _entry(LEAD_NAME, tmuxPaneId="leader", isActive=True),
        "sw": _entry("sw", backendType="tmux", pid=123, procToken="t1", isActive=True, status="idle"),
        "sw-starting": _entry("sw-starting", backendType="tmux", procToken="t2", isActive=False, status="starting"),
        "cc": _entry("cc", backendType="tmux", pid=124, procToken="t3", runtime="claude", status="running"),
        "pane": _entry("pane", backendType="tmux", tmuxPaneId="%3", isActive=False),
        "inproc": _entry("inproc", backendType="in-process", tmuxPaneId="in-process", isActive=True),
    }
    machine = Machine({})
    judged = {name: type(member_kind(m, machine)) for name, m in entries.items()}
    assert judged == {LEAD_NAME: TeamLead, "sw": SwarmTeammate, "sw-starting": SwarmTeammate, "cc": ClaudeCodePane,
                      "pane": LeadsPaneTeammate, "inproc": InProcessTeammate}
    # a swarm teammate between its entry and its pid is starting (swarm gave it a token), not a Claude Code lead's
    assert member_kind(entries["sw-starting"], machine).state() == "starting"
    # which frames count unmarked: those of the Claude Code kinds, and no others
    unmarked = {name for name, m in entries.items() if member_kind(m, machine).frames_unmarked}
    assert unmarked == {"cc", "pane", "inproc"}
    assert TeamFile(name=TEAM, lead_agent_id=f"{LEAD_NAME}@{TEAM}",
                    members=list(entries.values())).unmarked_senders() == frozenset(unmarked)


# -- one answer to "running?" --------------------------------------------------------------------


def test_a_claude_code_pane_runs_while_its_pid_does_and_status_and_reaping_agree(
        home: Home, sleeper: psutil.Process) -> None:
    """Its server is named, and holds nothing: the process alone says whether it runs (as reap_dead judges it)."""
    TeamStore(home).create(TEAM)
    recorded = {"backend_type": "tmux", "tmux_pane_id": "%0", "tmux_socket": "no-such-server", "pid": sleeper.pid,
                "proc_start": sleeper.create_time(), "proc_token": uuid.uuid4().hex, "runtime": "claude",
                "status": "running", "is_active": False}
    TeamStore(home).add_member(TEAM, Member(agent_id=f"bob@{TEAM}", name="bob", **recorded))
    machine = Machine(os.environ, home)
    bob = member_kind(TeamStore(home).get(TEAM).member("bob"), machine)  # type: ignore[arg-type]
    assert isinstance(bob, ClaudeCodePane) and bob.running() and bob.state() == "idle" and not bob.died()
    busy = member_kind(TeamStore(home).update_member(TEAM, "bob", is_active=True), machine)
    assert busy.running() and busy.state() == "busy"
    # swarm's own teammate with the same process: its isActive says whether it is in the team
    own = _entry("own", backendType="tmux", pid=sleeper.pid, procStart=sleeper.create_time(), procToken="t",
                 isActive=False, status="stopped")
    assert not member_kind(own, machine).running() and member_kind(own, machine).state() == "stopped"

    sleeper.kill()
    sleeper.wait()
    gone = member_kind(TeamStore(home).get(TEAM).member("bob"), machine)  # type: ignore[arg-type]
    assert not gone.running() and gone.died() and gone.state() == "stopped"
    assert reap_dead(home, TEAM) == ["bob"] and reap_dead(home, TEAM) == []
    assert {r.name: r.state for r in team_status(home, TEAM, os.environ)}["bob"] == "dead"


def test_an_in_process_teammate_runs_and_stops_with_its_lead(home: Home, sleeper: psutil.Process) -> None:
    TeamStore(home).create(TEAM)
    TeamStore(home).update_member(TEAM, LEAD_NAME, pid=sleeper.pid, proc_start=sleeper.create_time())
    TeamStore(home).add_member(TEAM, Member(agent_id=f"mia@{TEAM}", name="mia", backend_type="in-process",
                                            tmux_pane_id="in-process", is_active=False))
    team = TeamStore(home).get(TEAM)
    mia = member_kind(team.member("mia"), Machine(os.environ, home))  # type: ignore[arg-type]
    lead = member_kind(team.member(LEAD_NAME), Machine(os.environ, home))  # type: ignore[arg-type]
    assert lead.state() == "lead" and lead.running()
    assert mia.running() and mia.state() == "idle"
    assert not mia.left(approved=False) and mia.left(approved=True)  # no process of its own to watch end
    with pytest.raises(BackendError, match="lives inside its Claude Code lead"):
        mia.stop(1.0)
    assert not mia.forcible and not mia.records_end
    sleeper.kill()
    sleeper.wait()
    after = Machine(os.environ, home)  # a new batch: the lead is looked at again
    assert not member_kind(team.member("mia"), after).running()  # type: ignore[arg-type]
    assert member_kind(team.member("mia"), after).state() == "stopped"  # type: ignore[arg-type]


def test_a_claude_code_leads_teammate_that_leaves_during_the_wait_is_seen_gone(home: Home, tmp_path: Path) -> None:
    """Found by its agent id (no pid recorded): each round of the shutdown wait looks at the processes again."""
    TeamStore(home).create(TEAM)
    TeamStore(home).add_member(TEAM, Member(agent_id=f"cc@{TEAM}", name="cc", backend_type="tmux",
                                            tmux_pane_id="%9", is_active=False))
    teammate = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.5)", "--agent-id", f"cc@{TEAM}"],
                                env={**os.environ, "CLAUDE_CONFIG_DIR": str(home.root)})
    try:
        cc = member_kind(TeamStore(home).get(TEAM).member("cc"), Machine(os.environ, home))  # type: ignore[arg-type]
        assert isinstance(cc, LeadsPaneTeammate) and cc.running() and cc.state() == "idle"
        (outcome,) = shutdown(home, TEAM, ["cc"], os.environ, timeout=20)
    finally:
        teammate.kill()
        teammate.wait()
    assert outcome.result == "approved", outcome  # it left by itself; it was not forced at the timeout


# -- the live bug ---------------------------------------------------------------------------------


@needs_tmux
def test_an_idle_claude_code_pane_on_a_named_tmux_server_is_idle_and_asked_to_stop(
        home: Home, tmp_path: Path, socket_name: str) -> None:
    """A stand-in ``claude`` in a real pane, spawned as ``swarm spawn --runtime claude --tmux-socket NAME`` does."""
    claude = tmp_path / "bin" / "claude"
    claude.parent.mkdir()
    claude.write_text(STAND_IN)
    claude.chmod(0o755)
    TeamStore(home).create(TEAM)
    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-test"}
    member = spawn(home, SpawnRequest(team=TEAM, name="bob", prompt="work", cwd=tmp_path, runtime="claude",
                                      claude_bin=str(claude), tmux_socket=socket_name), env)
    try:
        Mailbox(home, TEAM).take("bob")  # what Claude Code does with its initial prompt
        wait_joined(home, TEAM, ["bob"], timeout=10)
        assert member.tmux_socket == socket_name and _panes(socket_name) == [member.tmux_pane_id]
        assert {r.name: r.state for r in team_status(home, TEAM, env)}["bob"] == "idle"  # was: stopped
        TeamStore(home).update_member(TEAM, "bob", is_active=True)  # Claude Code takes a turn
        assert {r.name: r.state for r in team_status(home, TEAM, env)}["bob"] == "busy"
    finally:
        (outcome,) = shutdown(home, TEAM, ["bob"], env, timeout=0.5)
    # it was running: asked, then forced down when the stand-in did not answer (was: swept as not running)
    assert outcome.result == "killed", outcome
    assert TeamStore(home).get(TEAM).member("bob").status == "killed"  # type: ignore[union-attr]
    assert _panes(socket_name) == [] and not is_pid_alive(member.pid or 0, member.proc_start)


@needs_tmux
def test_a_real_idle_claude_code_teammate_swarm_started_is_shown_idle(
        claude_code: Path, home: Home, tmp_path: Path, api: FakeAnthropicServer, socket_name: str) -> None:
    """The real Claude Code through the installed CLI: ``swarm spawn --runtime claude --tmux-socket NAME``."""
    api.otherwise(text_reply("OK"))  # its model answers every turn with "OK"; it never approves a shutdown
    user_home = tmp_path / "user-home"
    user_home.mkdir()
    env = {**os.environ, "HOME": str(user_home), "ANTHROPIC_API_KEY": API_KEY, "ANTHROPIC_BASE_URL": api.base_url,
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
           "SWARM_CLAUDE_BIN": str(claude_code)}

    def swarm_cli(*args: str) -> subprocess.CompletedProcess[str]:
        return run_swarm(args, env=env, cwd=tmp_path, timeout=120)

    TeamStore(home).create(TEAM)
    started = swarm_cli("spawn", "bob", "--team", TEAM, "-p", "Say OK.", "--runtime", "claude",
                        "--tmux-socket", socket_name)
    assert started.returncode == 0, started.stderr
    try:
        def idle() -> bool:
            senders = TeamStore(home).get(TEAM).unmarked_senders()
            return any(isinstance(entry_frame(e, unmarked_from=senders), IdleNotification) and e.sender == "bob"
                       for e in Mailbox(home, TEAM).read(LEAD_NAME))

        retry_until(idle, 90, interval=0.2, what="bob's idle notification")
        retry_until(lambda: TeamStore(home).get(TEAM).member("bob").is_active is False, 10,  # type: ignore[union-attr]
                    what="Claude Code to mark bob not busy")
        status = swarm_cli("status", "--team", TEAM, "--json")
        assert status.returncode == 0, status.stderr
        assert {row["name"]: row["state"] for row in json.loads(status.stdout)}["bob"] == "idle"  # was: stopped
        show = swarm_cli("team", "show", TEAM)
        assert show.returncode == 0 and any(line.split()[:1] == ["bob"] and " idle " in line
                                            for line in show.stdout.splitlines()), show.stdout
    finally:
        done = swarm_cli("shutdown", "bob", "--team", TEAM, "--timeout", "1")
    # it was running, so it was asked and then forced (was: "bob: not_running (running)", swept unasked)
    assert done.returncode == 0 and done.stdout.startswith("bob: killed"), (done.stdout, done.stderr)
    retry_until(lambda: _panes(socket_name) == [], 10, what="bob's pane to close")


# -- one owner ------------------------------------------------------------------------------------

SECOND_ANSWERS = ("process_alive", "is_running", "claude_code_member", "started_by_claude_code",
                  "claude_code_senders", "member_state", "stop_processes", "handle_of")
"""Names of the judgements the kinds replaced: none may come back beside them."""
PROCESS_JUDGES = {"runtime/member_kinds.py", "runtime/claude_members.py", "teammate/lead_watch.py",
                  "runtime/hosts/wake_relay.py"}
"""Outside the backends, the modules that may ask whether a member's process runs (``is_pid_alive``); the
lead watch judges only the lead process swarm started (``leadPid``), for teammates and the runtime alike, and
the host's wake relay only whether the process that left a waiter file still runs (no member's)."""


def _sources() -> Iterator[tuple[str, ast.Module]]:
    root = Path(swarm.__file__).parent
    for path in sorted(root.rglob("*.py")):
        yield str(path.relative_to(root)), ast.parse(path.read_text(), str(path))


def test_running_and_the_kinds_are_judged_in_one_place() -> None:
    defined = {f"{file}: {node.name}" for file, tree in _sources() for node in ast.walk(tree)
               if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in SECOND_ANSWERS}
    assert not defined, sorted(defined)
    judging = {file for file, tree in _sources() for node in ast.walk(tree)
               if isinstance(node, ast.ImportFrom) and any(a.name == "is_pid_alive" for a in node.names)
               and not file.startswith("backends/")}
    assert judging <= PROCESS_JUDGES, sorted(judging - PROCESS_JUDGES)
    in_process = set()  # the in-process kind is named in code only by its owners (docstrings aside)
    for file, tree in _sources():
        docstrings = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
        if any(isinstance(n, ast.Constant) and n.value == "in-process" and id(n) not in docstrings
               for n in ast.walk(tree)):
            in_process.add(file)
    assert in_process <= {"core/protocol.py", "runtime/member_kinds.py"}, sorted(in_process)
