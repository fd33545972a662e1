"""Teammates forked from the home's CLI server (``swarm.teammate.served``), for real.

The first teammate of a home finds no server: its launcher starts one and
waits for it. Every teammate is forked from that server. A tmux teammate's
pane runs a launcher and the teammate is the server's child; these tests
check that the pair behaves as one process to everyone outside: it answers,
``kill -9`` of either ends both, a stopped (SIGSTOPped) worker is still
killed by ``swarm shutdown``'s SIGKILL, a closed tmux pane stops it as a
terminal's hang-up would, and the server is never one of a teammate's processes.
A subprocess teammate spawned while the server runs has no launcher: the
server forks it loose (``fork_detached``), and it is one process of its own.

The home lives under a short /tmp path: a unix socket path is limited to ~107
bytes, and a longer one silently means "no server".
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from swarm.backends.procs import kill_tree, tagged
from swarm.cli.entry import server_pid
from swarm.core.frames import IdleNotification, entry_frame
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.core.teams import TeamStore
from swarm.cli.forkserver import SPARE_NAME
from swarm.runtime.member_kinds import Machine, member_kind, reap_dead
from swarm.runtime.shutdown import shutdown
from swarm.runtime.spawn import SpawnRequest, spawn
from swarm.teammate.delivery_worker import COMM as DELIVERY_COMM
from swarm.teammate.shared_worker import SHARED_COMM
from swarm.teammate.served import COMM, teammate_processes
from tests.backends.helpers import retry_until
from tests.cli.conftest import children_named, live_cli_server
from tests.teammate.conftest import PLAYBOOK

TEAM = "t"


def _gone(pid: int | None) -> bool:
    if pid is None:
        return True
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


class Team:
    def __init__(self, home: Home, work: Path, playbook: Path, tmux: str) -> None:
        self.home, self.work, self.playbook, self.tmux = home, work, playbook, tmux
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("SWARM_")}
        self.env.update(SWARM_HOME=str(home.root), SWARM_CLI_SERVER="1")

    def spawn(self, name: str, backend: str = "subprocess", **extra: object) -> Member:
        request = SpawnRequest(team=TEAM, name=name, prompt="hello", backend=backend, cwd=self.work,
                               playbook=self.playbook, tmux_socket=self.tmux, **extra)  # type: ignore[arg-type]
        spawn(self.home, request, self.env)
        return self.joined(name)

    def joined(self, name: str) -> Member:
        retry_until(lambda: self.member(name).status == "idle", 30, what=f"{name} to join")
        return self.member(name)

    def member(self, name: str) -> Member:
        member = TeamStore(self.home).get(TEAM).member(name)
        assert member is not None
        return member

    def served(self, name: str, backend: str = "tmux", **extra: object) -> Member:
        """A teammate spawned once the server answers, in a tmux pane: the pane's launcher, forked from the server."""
        self._server_up()
        member = self.spawn(name, backend, **extra)
        assert member.worker_pid is not None, "spawned with a server running, yet not forked from it"
        assert member.pid is not None
        return member

    def loose(self, name: str, **extra: object) -> Member:
        """A subprocess teammate spawned once the server answers: forked loose, no launcher beside it."""
        self._server_up()
        member = self.spawn(name, "subprocess", **extra)
        assert member.pid is not None and member.worker_pid is None, "a launcher was started beside it"
        proc = psutil.Process(member.pid)
        assert proc.name() == COMM.decode(), "not forked from the server"
        assert os.getsid(member.pid) == member.pid  # a session of its own: signalled as a group, alone
        assert member.proc_start == proc.create_time()
        return member

    def _server_up(self) -> None:
        retry_until(lambda: live_cli_server(self.home) is not None and self.home.cli_socket_path.exists(), 60,
                    what="the CLI server")

    def answers(self, name: str, token: str) -> None:
        Mailbox(self.home, TEAM).send(name, f"ping {token}", sender="team-lead")
        retry_until(lambda: f"pong {token} from {name}" in self.lead_texts(), 15, what=f"{name}'s pong {token}")

    def idle_notifications(self, name: str) -> int:
        """How many turns ``name`` has ended (its idle notification is the last thing a turn writes)."""
        frames = [entry_frame(e) for e in Mailbox(self.home, TEAM).read("team-lead")]
        return sum(isinstance(f, IdleNotification) and f.sender == name for f in frames)

    def lead_texts(self) -> list[str]:
        return [e.text for e in Mailbox(self.home, TEAM).read("team-lead")]


@pytest.fixture
def team(tmp_path: Path) -> Iterator[Team]:
    root = Path(tempfile.mkdtemp(prefix="swsv-", dir="/tmp"))
    home = Home(root / "home")
    TeamStore(home).create(TEAM)
    playbook = tmp_path / "playbook.toml"
    playbook.write_text(PLAYBOOK)
    work = tmp_path / "work"
    work.mkdir()
    tmux = f"swarm-test-{uuid.uuid4().hex[:10]}"
    made = Team(home, work, playbook, tmux)
    try:
        yield made
    finally:
        for member in TeamStore(home).get(TEAM).members:
            also = [(member.worker_pid, member.worker_start)] if member.worker_pid else []
            if member.pid or also:
                kill_tree(member.pid, 1.0, member.proc_start, token=member.proc_token, also=also)
        server = live_cli_server(home)
        if server:
            os.kill(server, signal.SIGTERM)
            retry_until(lambda: _gone(server), 10, what="the CLI server to stop")
        subprocess.run(["tmux", "-L", tmux, "kill-server"], capture_output=True, check=False)
        shutil.rmtree(root, ignore_errors=True)


def _server_story(home: Home, pid: int | None) -> str:
    """What became of the CLI server ``pid``, for a failure's message: its process, the lock's pid, its log."""
    try:
        state = f"{psutil.Process(pid or 0).status()}, {psutil.Process(pid or 0).cmdline()}"
    except psutil.Error as exc:
        state = f"gone ({exc})"
    log = home.cli_log_path.read_text(errors="replace")[-2000:] if home.cli_log_path.exists() else "(no log)"
    return f"server {pid}: {state}; lock names {server_pid(home.cli_lock_path)}; its log ends:\n{log}"


def test_the_first_teammate_starts_the_server_and_every_one_is_forked_from_it(team: Team) -> None:
    assert live_cli_server(team.home) is None
    first = team.spawn("alice")  # no server yet: alice's launcher starts one and waits for it
    assert first.worker_pid is not None
    assert psutil.Process(first.pid).cmdline()[1:4] == ["-m", "swarm.cli.entry", "_teammate"]
    server = live_cli_server(team.home)
    assert psutil.Process(first.worker_pid).ppid() == server
    bob = team.loose("bob")
    assert psutil.Process(bob.pid).ppid() not in (server, os.getpid())  # reparented: nobody's child to wait on it
    team.answers("bob", "b1")
    team.answers("alice", "a1")
    # the server alice's launcher started is none of alice's processes: stopping her leaves it serving
    assert server not in [p.pid for p in psutil.Process(first.pid).children(recursive=True)]
    member_kind(first, Machine(team.env, team.home)).stop(grace=2.0)
    assert live_cli_server(team.home) == server, _server_story(team.home, server)
    team.answers("bob", "b2")


def test_loose_teammates_spawned_back_to_back_all_join_with_no_launcher(team: Team) -> None:
    """Each answers its pid only once it has left the forking child's process group: a client that hangs up
    right after reading it (as spawn does) makes the server SIGHUP that group, which must miss the teammate."""
    team.spawn("alice")
    names = [f"m{i}" for i in range(6)]
    loose = [team.loose(name) for name in names]
    for name in names:
        team.answers(name, f"{name}x1")
    alice = team.member("alice")
    running = sorted(p.pid for p in teammate_processes(str(team.home.root)))
    assert running == sorted([m.pid for m in loose] + [alice.pid, alice.worker_pid])  # one process each, and
    # alice's launcher (she started the server) beside her worker


def test_kill_9_of_a_loose_teammate_is_seen_dead(team: Team) -> None:
    team.spawn("alice")
    bob = team.loose("bob")
    os.kill(bob.pid or 0, signal.SIGKILL)
    retry_until(lambda: _gone(bob.pid), 10, what="bob to die")
    assert reap_dead(team.home, TEAM) == ["bob"]
    team.answers("alice", "a1")


def test_a_loose_teammate_outlives_its_server_and_is_stopped_by_shutdown(team: Team) -> None:
    team.spawn("alice")
    bob = team.loose("bob")
    server = live_cli_server(team.home)
    assert server is not None
    os.kill(server, signal.SIGKILL)
    retry_until(lambda: _gone(server), 10, what="the server to die")
    team.answers("bob", "b1")  # the teammate does not depend on the server
    outcomes = shutdown(team.home, TEAM, ["bob"], team.env, timeout=15.0)
    assert [o.result for o in outcomes] == ["approved"]
    retry_until(lambda: _gone(bob.pid), 10, what="bob to exit")
    assert team.member("bob").status == "stopped"


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")
def test_kill_9_of_the_launcher_kills_the_forked_teammate(team: Team) -> None:
    team.spawn("alice")
    bob = team.served("bob")
    os.kill(bob.pid or 0, signal.SIGKILL)  # what a person or a test does to the pid `swarm status` shows
    retry_until(lambda: _gone(bob.worker_pid), 10, what="the forked teammate to die with its launcher")
    # the launcher too: its exit closes its files (the worker then dies) before it is a zombie, and on a loaded
    # machine reap_dead could look in between and still find it running
    retry_until(lambda: _gone(bob.pid), 10, what="the launcher to be gone")
    assert "teammate stopped" not in team.home.log_path(TEAM, "bob").read_text()  # killed, not asked to stop
    assert reap_dead(team.home, TEAM) == ["bob"]
    assert [p.pid for p in teammate_processes(str(team.home.root))
            if p.pid in (bob.pid, bob.worker_pid)] == []


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")
def test_kill_9_of_the_forked_teammate_ends_its_launcher(team: Team) -> None:
    team.spawn("alice")
    bob = team.served("bob")
    launcher = psutil.Process(bob.pid)
    os.kill(bob.worker_pid or 0, signal.SIGKILL)
    retry_until(lambda: _gone(bob.pid), 10, what="the launcher to exit")
    assert not launcher.is_running() or launcher.status() == psutil.STATUS_ZOMBIE
    assert reap_dead(team.home, TEAM) == ["bob"]


def _shared_worker(team: Team) -> psutil.Process:
    server = live_cli_server(team.home)
    assert server is not None
    [shared] = children_named(psutil.Process(server), SHARED_COMM)
    return shared


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")
def test_every_forked_teammate_uses_the_servers_one_delivery_worker(team: Team) -> None:
    """A pane's teammate (behind its launcher) and a loose one are served by the one worker the CLI server forked,
    a thread each: none forks a worker of its own, and the prunes are done (their inboxes empty once idle)."""
    team.spawn("alice")
    bob, carol = team.served("bob"), team.loose("carol")
    for token in ("1", "2", "3"):
        team.answers("bob", f"b{token}")
        team.answers("carol", f"c{token}")
    shared = _shared_worker(team)
    assert shared.status() != psutil.STATUS_ZOMBIE, "the shared delivery worker died"
    for pid in (bob.worker_pid, carol.pid):
        assert not children_named(psutil.Process(pid), DELIVERY_COMM)
    retry_until(lambda: not Mailbox(team.home, TEAM).read("bob") and not Mailbox(team.home, TEAM).read("carol"),
                10, what="the prunes")
    assert "delivery worker" not in team.home.log_path(TEAM, "bob").read_text()  # no stand-in was needed


def test_the_shared_worker_outlives_its_server_while_teammates_use_it_then_ends(team: Team) -> None:
    """The server ends (SIGTERM: as after its idle time); its teammates go on, their jobs done by the worker;
    once the last one has stopped, the worker ends by itself."""
    team.spawn("alice")
    team.loose("bob")
    shared = _shared_worker(team)
    server = live_cli_server(team.home)
    assert server is not None
    os.kill(server, signal.SIGTERM)
    retry_until(lambda: _gone(server), 10, what="the server to stop")
    team.answers("bob", "b1")
    retry_until(lambda: not Mailbox(team.home, TEAM).read("bob"), 10, what="bob's prune, by the shared worker")
    assert shared.is_running() and shared.status() != psutil.STATUS_ZOMBIE
    outcomes = shutdown(team.home, TEAM, None, team.env, timeout=15.0)
    assert sorted(o.result for o in outcomes) == ["approved", "approved"]
    retry_until(lambda: _gone(shared.pid), 10, what="the shared worker to end with the last teammate")


def test_a_shared_worker_that_does_not_answer_is_not_waited_for(team: Team) -> None:
    """Stopped (SIGSTOP), it cannot say it serves the next teammate: that one forks a worker of its own after a
    short wait, instead of hanging at its start."""
    team.spawn("alice")
    shared = _shared_worker(team)
    os.kill(shared.pid, signal.SIGSTOP)
    try:
        server = psutil.Process(live_cli_server(team.home))
        [spare] = children_named(server, SPARE_NAME)
        spare.kill()  # its connection was answered before the stop: the next spare's is not
        spares = lambda: [p.pid for p in children_named(server, SPARE_NAME)]  # noqa: E731
        retry_until(lambda: spares() not in ([], [spare.pid]), 10, what="the next spare")
        carol = team.loose("carol")
        team.answers("carol", "c1")
        assert children_named(psutil.Process(carol.pid), DELIVERY_COMM)
    finally:
        os.kill(shared.pid, signal.SIGCONT)


def test_a_killed_shared_worker_is_stood_in_for_and_the_next_teammate_gets_a_new_one(team: Team) -> None:
    team.spawn("alice")
    team.loose("bob")
    first = _shared_worker(team)
    os.kill(first.pid, signal.SIGKILL)
    retry_until(lambda: _gone(first.pid), 10, what="the shared worker to die")
    team.answers("bob", "b1")  # bob does his jobs himself from now on
    retry_until(lambda: not Mailbox(team.home, TEAM).read("bob"), 10, what="bob's own prune")
    assert "the delivery worker ended" in team.home.log_path(TEAM, "bob").read_text()
    carol = team.loose("carol")
    team.answers("carol", "c1")
    second = _shared_worker(team)
    assert second.pid != first.pid
    assert not children_named(psutil.Process(carol.pid), DELIVERY_COMM)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")
def test_a_forked_teammate_outlives_its_server_and_still_dies_with_its_launcher(team: Team) -> None:
    team.spawn("alice")
    bob = team.served("bob")
    server = live_cli_server(team.home)
    assert server is not None
    os.kill(server, signal.SIGKILL)  # no server to SIGHUP bob when his launcher goes
    retry_until(lambda: _gone(server), 10, what="the server to die")
    team.answers("bob", "b1")  # the teammate does not depend on the server
    os.kill(bob.pid or 0, signal.SIGKILL)
    retry_until(lambda: _gone(bob.worker_pid), 10, what="the forked teammate to die with its launcher, unwatched")
    assert reap_dead(team.home, TEAM) == ["bob"]  # and the team sees it gone


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")
def test_shutdown_sigkills_a_frozen_forked_teammate_itself_not_only_its_launcher(team: Team) -> None:
    """A SIGSTOPped worker cannot run its watcher: only ``kill_tree``'s own SIGKILL of ``worker_pid`` ends it."""
    team.spawn("alice")
    bob = team.served("bob")
    # its first turn (the spawn prompt) ends before the ping goes: else, on a loaded machine, both can arrive in
    # one batch, one turn, and the second idle notification waited for below never comes
    retry_until(lambda: team.idle_notifications("bob") >= 1, 15, what="bob's first turn to end")
    team.answers("bob", "b0")
    # frozen between turns, after its last write: a process frozen inside a write would hold the team's lock
    retry_until(lambda: team.idle_notifications("bob") >= 2, 15, what="bob's second turn to end")
    os.kill(bob.worker_pid or 0, signal.SIGSTOP)
    try:
        outcomes = shutdown(team.home, TEAM, ["bob"], team.env, timeout=1.0)
        assert [o.result for o in outcomes] == ["killed"]
        retry_until(lambda: _gone(bob.worker_pid) and _gone(bob.pid), 10, what="launcher and worker to go")
    finally:
        if not _gone(bob.worker_pid):
            os.kill(bob.worker_pid or 0, signal.SIGKILL)


def test_swarm_shutdown_approves_and_leaves_no_teammate_process(team: Team) -> None:
    team.spawn("alice")
    bob = team.loose("bob")
    outcomes = shutdown(team.home, TEAM, ["alice", "bob"], team.env, timeout=15.0)
    assert sorted(o.result for o in outcomes) == ["approved", "approved"]
    retry_until(lambda: not teammate_processes(str(team.home.root)), 10, what="every teammate process to end")
    assert _gone(bob.pid)
    assert live_cli_server(team.home) is not None  # the server is the home's, not a teammate's


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")
def test_a_forked_teammate_in_a_tmux_pane_stops_when_its_pane_is_closed(team: Team) -> None:
    team.spawn("alice")
    carol = team.served("carol", backend="tmux")
    assert psutil.Process(carol.worker_pid).ppid() == live_cli_server(team.home)
    team.answers("carol", "c1")
    subprocess.run(["tmux", "-L", team.tmux, "kill-pane", "-t", carol.tmux_pane_id], check=True)
    retry_until(lambda: _gone(carol.worker_pid) and _gone(carol.pid), 10, what="carol's processes to end")
    log = team.home.log_path(TEAM, "carol").read_text()
    assert "teammate stopped by SIGHUP" in log  # a hang-up, handled as a terminal's: the teammate stopped itself


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux not installed")
def test_a_sigterm_to_the_launcher_stops_the_teammate_as_it_would_stop_itself(team: Team) -> None:
    team.spawn("alice")
    bob = team.served("bob")
    os.kill(bob.pid or 0, signal.SIGTERM)
    retry_until(lambda: _gone(bob.pid) and _gone(bob.worker_pid), 10, what="launcher and worker to exit")
    assert "teammate stopped by SIGTERM" in team.home.log_path(TEAM, "bob").read_text()
    assert team.member("bob").status == "dead"  # it recorded its own end, as an unserved teammate does


def test_a_bad_teammate_command_line_gets_the_same_answer_served_or_not(team: Team) -> None:
    team.spawn("alice")  # the server is up
    exe = Path(sys.executable).with_name("swarm")
    served = subprocess.run([str(exe), "_teammate", "--no-such-option"], capture_output=True, text=True,
                            env=team.env, timeout=60)
    local = subprocess.run([str(exe), "_teammate", "--no-such-option"], capture_output=True, text=True,
                           env={**team.env, "SWARM_CLI_SERVER": "0"}, timeout=60)
    assert served.returncode == local.returncode == 2
    assert "Traceback" not in served.stderr
    assert served.stderr.splitlines()[-1] == local.stderr.splitlines()[-1]
    assert "error: the following arguments are required" in served.stderr


def test_what_a_forked_teammates_bash_starts_carries_its_token_and_is_stopped_with_it(team: Team) -> None:
    """A forked teammate's /proc environ is the server's, but its children get the teammate's environment."""
    team.spawn("alice")
    bob = team.loose("bob", allowed_tools=["Bash"])
    Mailbox(team.home, TEAM).send("bob", "slow job j1", sender="team-lead")
    runs = team.work / "runs.txt"
    retry_until(lambda: runs.exists() and "j1" in runs.read_text(), 15, what="bob's Bash to start")
    sleepers = [p for p in tagged(bob.proc_token or "") if "sleep" in " ".join(p.cmdline())]
    assert sleepers, "the Bash tool's process does not carry the teammate's token"
    assert bob.pid not in [p.pid for p in tagged(bob.proc_token or "")]  # the teammate itself is found by pid
    member_kind(team.member("bob"), Machine(team.env, team.home)).stop(grace=1.0)
    retry_until(lambda: all(_gone(p.pid) for p in sleepers) and _gone(bob.pid), 10,
                what="the teammate and its Bash command to be stopped")


def test_a_forked_teammate_imports_nothing_through_its_first_turns(team: Team) -> None:
    """What the server imported before the fork is shared by every teammate; a module a teammate imports itself
    is its own pages and CPU (inotify_simple looks libc up through ``ldconfig``: ~6 ms each)."""
    subprocess.Popen([sys.executable, "-X", "importtime", "-P", "-m", "swarm.cli.forkserver", str(team.home.root)],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True, env=team.env)  # as a first client starts it, -X importtime added:
    bob = team.loose("bob")                             # its forked children report their imports too
    team.answers("bob", "b1")
    log = team.home.log_path(TEAM, "bob").read_text()
    imported = [line.split("|")[-1].strip() for line in log.splitlines() if line.startswith("import time:")]
    assert imported == [], f"bob (pid {bob.pid}) imported after the fork: {imported}"
