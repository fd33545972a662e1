"""The CLI server (swarm.cli.forkserver) and its client (swarm.cli.entry), for real.

Every test runs the installed ``swarm`` in subprocesses against a scratch home
under a short /tmp path (a unix socket path is limited to ~107 bytes), with the
server switched on; the ``served`` fixture stops the server and removes the home.
That a call was served is seen from the outside: its process imported no
pydantic (``-X importtime``), or its command runs as a child of the server.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest

from swarm.cli.forkserver import SPARE_NAME
from swarm.teammate.shared_worker import SHARED_COMM
from swarm.core.rendezvous import DETACH, MAGIC, fork_detached, package_dir
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from tests.cli.conftest import SWARM_EXE, live_cli_server, stop_server

TEAM = "t1"


@dataclass
class Served:
    home: Home
    env: dict[str, str]

    def run(self, *args: str, input: str | None = None, env: dict[str, str] | None = None,
            importtime: bool = False) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-X", "importtime", str(SWARM_EXE)] if importtime else [str(SWARM_EXE)]
        return subprocess.run([*argv, *args], capture_output=True, text=True, input=input, cwd="/",
                              env=env or self.env, timeout=60)

    def popen(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen([str(SWARM_EXE), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=self.env, cwd="/")

    def server_pid(self) -> int | None:
        """The live server's pid (from its lock file), or None."""
        return live_cli_server(self.home)

    def start_server(self) -> int:
        """A first served call runs here and starts the server; wait until it answers."""
        assert self.run("status", "-t", TEAM).returncode == 0
        return self.wait_for_server()

    def wait_for_server(self, other_than: int | None = None) -> int:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            pid = self.server_pid()
            if pid and pid != other_than and self.home.cli_socket_path.exists():
                return pid  # the socket file appears only once it listens (not probed: a probe gets a child)
            time.sleep(0.05)
        raise AssertionError(f"no CLI server came up; its log: {_log(self.home)}")

    def children_of_server(self) -> list[psutil.Process]:
        """The server's children that serve (or served) a command: not its waiting spare or its teammates' shared
        delivery worker, nor one reaped while they were listed (its name can no longer be read: it is not a child
        any more)."""
        pid = self.server_pid()
        serving = []
        for child in psutil.Process(pid).children() if pid else []:
            try:
                if child.name() not in (SPARE_NAME.decode(), SHARED_COMM.decode()):
                    serving.append(child)
            except psutil.NoSuchProcess:
                continue
        return serving

    def lead_texts(self) -> list[str]:
        return [entry.text for entry in Mailbox(self.home, TEAM).read("team-lead")]


def _answer(conn: socket.socket) -> bytes:
    """What the server said before it closed (a reset, unread bytes left behind, is a close too)."""
    try:
        return conn.recv(64)
    except ConnectionResetError:
        return b""


def _log(home: Home) -> str:
    try:
        return home.cli_log_path.read_text()[-2000:]
    except OSError:
        return "(none)"


def _wait(predicate: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _gone(proc: psutil.Process | int) -> bool:
    """Ended: no such process any more, or a zombie waiting for its parent (or init) to reap it."""
    try:
        return (proc if isinstance(proc, psutil.Process) else psutil.Process(proc)).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _servers_of(home: Home) -> list[psutil.Process]:
    """The home's live servers (and their forked children, not a waiting spare or the shared delivery worker); a
    zombie waiting for init to reap it is gone."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status", "name"]):
        cmd = proc.info["cmdline"] or []
        if ("swarm.cli.forkserver" in cmd and str(home.root) in cmd and proc.info["status"] != psutil.STATUS_ZOMBIE
                and proc.info["name"] not in (SPARE_NAME.decode(), SHARED_COMM.decode())):
            found.append(proc)
    return found


@pytest.fixture
def served() -> Iterator[Served]:
    root = Path(tempfile.mkdtemp(prefix="swsrv-", dir="/tmp"))
    home = Home(root / "home")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWARM_")}
    env.update(SWARM_HOME=str(home.root), SWARM_CLI_SERVER="1")
    try:
        made = subprocess.run([str(SWARM_EXE), "team", "create", TEAM], capture_output=True, text=True,
                              env={**env, "SWARM_CLI_SERVER": "0"}, timeout=60)
        assert made.returncode == 0, made.stderr
        yield Served(home, env)
    finally:
        for proc in _servers_of(home):
            stop_server(proc)
        _wait(lambda: not _servers_of(home), "the servers to end", timeout=10)
        shutil.rmtree(root, ignore_errors=True)


def _imported_pydantic(result: subprocess.CompletedProcess[str]) -> bool:
    return any(line.startswith("import time:") and "pydantic" in line for line in result.stderr.splitlines())


def test_a_served_send_delivers_once_and_its_process_loads_none_of_the_cli(served: Served) -> None:
    served.start_server()
    result = served.run("send", "-t", TEAM, "team-lead", "hello", importtime=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "sent to team-lead\n"
    assert not _imported_pydantic(result)  # served: the work ran in the server's child
    imported = {line.split("|")[2].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}
    assert not imported & {"pathlib", "typing", "socket", "selectors", "signal", "swarm.core.home"}, \
        "finding the server imports only what it needs (swarm.core.rendezvous, _socket, _signal): ~5 ms of a send"
    assert not imported & {"re", "enum", "functools"}, \
        "the installed `swarm` is bin/swarm as shipped, not pip's console-script wrapper (which imports re: ~3 ms)"
    assert served.lead_texts() == ["hello"]
    local = served.run("send", "-t", TEAM, "team-lead", "here", importtime=True,
                       env={**served.env, "SWARM_CLI_SERVER": "0"})
    assert local.returncode == 0 and _imported_pydantic(local)  # the check above can fail
    assert served.lead_texts() == ["hello", "here"]


def test_stdin_env_exit_codes_and_errors_reach_the_caller_as_from_a_local_run(served: Served) -> None:
    served.start_server()
    piped = served.run("send", "-t", TEAM, "team-lead", "-", input="from stdin\n", importtime=True)
    assert piped.returncode == 0 and not _imported_pydantic(piped), piped.stderr
    by_env = served.run("send", "team-lead", "team from env", env={**served.env, "SWARM_TEAM": TEAM})
    assert by_env.returncode == 0, by_env.stderr
    unknown = served.run("send", "-t", TEAM, "nobody", "x", importtime=True)
    assert not _imported_pydantic(unknown)
    assert unknown.returncode == 1
    assert unknown.stderr.splitlines()[-1].startswith("swarm: error: no member 'nobody' in team 't1'")
    usage = served.run("send", "-t", TEAM)
    assert usage.returncode == 2 and "Missing argument 'NAME'" in usage.stderr
    status = served.run("status", "-t", TEAM, "--json")
    assert status.returncode == 0 and '"team-lead"' in status.stdout
    assert served.lead_texts() == ["from stdin\n", "team from env"]  # stdin as read, as a local run keeps it


def test_ctrl_c_reaches_the_served_command_and_ends_it_as_a_local_ctrl_c_would(served: Served) -> None:
    server = served.start_server()
    follow = served.popen("inbox", "-t", TEAM, "team-lead", "--follow")
    try:
        _wait(lambda: len(served.children_of_server()) == 1, "the follow to run in the server's child")
        assert served.run("send", "-t", TEAM, "team-lead", "while following").returncode == 0
        assert follow.stdout is not None
        _wait(lambda: "while following" in (follow.stdout.readline() or ""), "the followed entry")
        follow.send_signal(signal.SIGINT)
        out, err = follow.communicate(timeout=30)
    finally:
        follow.kill()
    assert follow.returncode == 0 and err == ""  # a follow ends quietly on Ctrl-C (messages._follow)
    _wait(lambda: not served.children_of_server(), "the server's child to be reaped")
    assert served.server_pid() == server  # the server itself stays


def test_a_client_killed_mid_command_takes_its_served_child_with_it(served: Served) -> None:
    served.start_server()
    follow = served.popen("inbox", "-t", TEAM, "team-lead", "--follow")
    try:
        _wait(lambda: len(served.children_of_server()) == 1, "the follow to run in the server's child")
        child = served.children_of_server()[0]
        follow.kill()  # kill -9 of the `swarm` the user ran: nothing forwards a signal
        follow.communicate(timeout=30)
        _wait(lambda: not served.children_of_server(), "the served child of a killed client to end and be reaped",
              timeout=10)  # the server reaps on SIGCHLD: a zombie for a moment first
        assert _gone(child) and not served.children_of_server()
    finally:
        follow.kill()
        follow.communicate()


def test_a_served_child_killed_mid_command_is_reported_not_hidden(served: Served) -> None:
    served.start_server()
    follow = served.popen("inbox", "-t", TEAM, "team-lead", "--follow")
    try:
        _wait(lambda: len(served.children_of_server()) == 1, "the follow to run in the server's child")
        # past "go" (a child killed before it is a command that never ran, and runs in the client instead)
        Mailbox(served.home, TEAM).send("team-lead", "are you following", sender="tester")
        assert follow.stdout is not None
        ready, _, _ = select.select([follow.stdout], [], [], 30)
        assert ready and "are you following" in follow.stdout.readline()
        served.children_of_server()[0].kill()
        _, err = follow.communicate(timeout=30)
    finally:
        follow.kill()
    assert follow.returncode == 1
    assert "ended without an exit status" in err


def _request(argv: list[str], env: dict[str, str]) -> bytes:
    """A well-formed request, as swarm.cli.entry builds it."""
    return b"\0".join([MAGIC, os.fsencode(sys.prefix), os.fsencode(package_dir()), b"/", b"22", b"%d" % len(argv),
                       *map(os.fsencode, argv), *(f"{k}={v}".encode() for k, v in env.items())])


@contextlib.contextmanager
def _raw_request(served: Served, argv: list[str]) -> Iterator[socket.socket]:
    """A connection to the server that has sent ``argv`` as a well-formed request (fds 0-2: /dev/null)."""
    body = _request(argv, served.env)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn, open(os.devnull, "r+b") as null:
        conn.settimeout(30)
        conn.connect(os.fspath(served.home.cli_socket_path))
        socket.send_fds(conn, [b"%08d" % len(body)], [null.fileno()] * 3)
        conn.sendall(body)
        yield conn


def test_a_client_that_leaves_before_go_runs_nothing(served: Served) -> None:
    served.start_server()
    with _raw_request(served, ["swarm", "send", "-t", TEAM, "team-lead", "ghost"]) as conn:
        assert conn.makefile("rb").readline().startswith(b"P")  # the child is there, waiting for "go"
        time.sleep(1)
        assert served.lead_texts() == []  # started, connected, not told to go: it has not run
    _wait(lambda: not served.children_of_server(), "the child that was not told to go to end")
    assert served.run("send", "-t", TEAM, "team-lead", "real").returncode == 0
    assert served.lead_texts() == ["real"]


def test_a_detach_asked_for_a_command_that_is_not_a_teammate_is_refused_and_runs_nothing(served: Served) -> None:
    """``D`` forks a teammate loose (``fork_detached``); asked for any other command (a ``send`` that would run
    with no client waiting for its status), the server says ``N`` and nothing runs."""
    served.start_server()
    with _raw_request(served, ["swarm", "send", "-t", TEAM, "team-lead", "loose send"]) as conn:
        answers = conn.makefile("rb")
        assert answers.readline().startswith(b"P")
        conn.sendall(DETACH)
        assert answers.readline() == b"N\n"
        assert answers.readline() == b""  # and closed: no pid, no status
    _wait(lambda: not served.children_of_server(), "the refusing child to end")
    time.sleep(0.5)
    assert served.lead_texts() == []
    assert fork_detached(str(served.home.root), ["swarm", "send", "-t", TEAM, "team-lead", "x"], served.env, "/",
                         (0, 1, 2)) is None  # the client's side: refused means "start it yourself"
    assert served.lead_texts() == []


def test_garbage_and_silence_on_the_socket_neither_run_anything_nor_stall_the_server(served: Served) -> None:
    server = served.start_server()
    path = os.fspath(served.home.cli_socket_path)
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.connect(path)  # connects and says nothing: its child waits, nobody else does
    try:
        attacks = [
            lambda c: c.sendall(b"GET / HTTP/1.0\r\n\r\n"),  # no fds, not a length
            lambda c: socket.send_fds(c, [b"00000010"], [0]) and c.sendall(b"x" * 10),  # one fd, not three
            lambda c: socket.send_fds(c, [b"99999999"], [0, 1, 2]),  # a body far over the limit
            lambda c: socket.send_fds(c, [b"00000005"], [0, 1, 2]) and c.sendall(b"hello"),  # not a request
        ]
        for attack in attacks:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.settimeout(10)
                conn.connect(path)
                try:
                    attack(conn)
                    conn.shutdown(socket.SHUT_WR)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the server's child already hung up on what it read first (one fd, not three)
                assert _answer(conn) == b""  # closed, never "P": nothing was started
        began = time.monotonic()
        result = served.run("send", "-t", TEAM, "team-lead", "after the attacks", importtime=True)
        assert result.returncode == 0 and not _imported_pydantic(result), result.stderr
        assert time.monotonic() - began < 4.5  # under the child's 5 s request timeout: not queued behind it
    finally:
        silent.close()
    assert served.server_pid() == server
    assert served.lead_texts() == ["after the attacks"]


def test_the_socket_is_private_to_its_user(served: Served) -> None:
    served.start_server()
    assert served.home.cli_socket_path.stat().st_mode & 0o777 == 0o600
    assert served.home.run_dir.stat().st_mode & 0o777 == 0o700
    if os.getuid() != 0:
        return  # another user cannot be played without root; the modes above are the guard
    pid = os.fork()
    if pid == 0:  # another user's process, as root can make one: it may not even reach the socket
        code = 1
        try:
            os.setgid(65534)
            os.setuid(65534)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                probe.connect(os.fspath(served.home.cli_socket_path))
            code = 0
        except PermissionError:
            code = 13
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 13


def test_changed_code_is_never_served(served: Served, tmp_path: Path) -> None:
    extra = Path(tempfile.mkdtemp(prefix="swsrv-path-", dir="/tmp"))
    try:
        env = {**served.env, "PYTHONPATH": str(extra)}  # an import directory the server watches
        assert served.run("status", "-t", TEAM, env=env).returncode == 0
        old = served.wait_for_server()
        time.sleep(0.05)  # past the file system's timestamp tick (a few ms): the server compares mtimes
        (extra / "upgraded.py").write_text("")  # what an upgrade does to an import directory
        result = served.run("send", "-t", TEAM, "team-lead", "after upgrade", env=env, importtime=True)
        assert result.returncode == 0, result.stderr
        assert _imported_pydantic(result)  # refused as stale: it ran here, on the new code
        _wait(lambda: _gone(old), "the stale server to exit")
        assert served.run("status", "-t", TEAM, env=env).returncode == 0
        assert served.wait_for_server(other_than=old) != old
        assert served.lead_texts() == ["after upgrade"]
        other_path = served.run("send", "-t", TEAM, "team-lead", "other path", importtime=True)
        assert other_path.returncode == 0 and _imported_pydantic(other_path)  # PYTHONPATH differs: not served
    finally:
        shutil.rmtree(extra, ignore_errors=True)


def test_an_idle_server_exits_and_removes_its_socket(served: Served) -> None:
    # long enough to be seen up on a loaded machine (the start-up call runs in-process beside the server's imports)
    env = {**served.env, "SWARM_CLI_SERVER_IDLE": "3"}
    assert served.run("status", "-t", TEAM, env=env).returncode == 0
    served.wait_for_server()
    _wait(lambda: served.server_pid() is None, "the idle server to exit")
    assert not served.home.cli_socket_path.exists()
    assert served.server_pid() is None


def test_many_first_calls_start_one_server(served: Served) -> None:
    calls = [served.popen("status", "-t", TEAM) for _ in range(6)]
    for call in calls:
        call.communicate(timeout=60)
        assert call.returncode == 0
    served.wait_for_server()
    time.sleep(1)  # late starters find the lock taken and exit
    assert len(_servers_of(served.home)) == 1


def test_switched_off_no_server_is_started(served: Served) -> None:
    off = {**served.env, "SWARM_CLI_SERVER": "0"}
    assert served.run("send", "-t", TEAM, "team-lead", "local", env=off).returncode == 0
    time.sleep(1)
    assert not _servers_of(served.home)
    assert not served.home.cli_socket_path.exists()


def test_the_server_holds_no_directory_of_its_caller(served: Served) -> None:
    pid = served.start_server()
    assert psutil.Process(pid).cwd() == "/"


def test_a_served_command_in_a_home_that_does_not_exist_leaves_no_trace(served: Served) -> None:
    missing = served.home.root.parent / "typo"
    result = served.run("status", "-t", TEAM, env={**served.env, "SWARM_HOME": str(missing)})
    assert result.returncode == 1 and result.stderr.startswith("swarm: error:")
    time.sleep(1)  # a server it started (it must not start one) would have made <home>/run by now
    assert not missing.exists()


def test_a_server_whose_home_is_removed_exits(served: Served) -> None:
    pid = served.start_server()

    def spare_forked() -> bool:  # the warm-up is over: its rehearsal no longer writes in the home
        try:
            return any(child.name() == SPARE_NAME.decode() for child in psutil.Process(pid).children())
        except psutil.NoSuchProcess:
            return False

    _wait(spare_forked, "the server's warm-up to end")
    shutil.rmtree(served.home.root)  # `rm -rf` of a scratch home: its server must not linger for the idle time
    _wait(lambda: not _servers_of(served.home), "the server of a removed home to exit")
    assert not _servers_of(served.home)
