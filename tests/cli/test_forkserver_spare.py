"""The CLI server's spare (``swarm.cli.forkserver.Spare``): the child of the next command, forked ahead of it.

A served command used to wait for its child's fork (~2 ms of a ~55 MB
process, more under load) and set-up; the spare has done both while the
server idled. These tests check the spare really is the process that serves
the next command, that a new one replaces it, and that no spare outlives its
server, however the server ends, or makes a command fail when it is gone.
"""

from __future__ import annotations

import os
import signal
import time

import psutil

from swarm.cli.forkserver import SPARE_NAME
from tests.cli.conftest import children_named
from tests.cli.test_forkserver import TEAM, Served, _raw_request, _wait, served  # noqa: F401  (fixture)


def _spares(served: Served) -> list[psutil.Process]:
    pid = served.server_pid()
    return [] if pid is None else children_named(psutil.Process(pid), SPARE_NAME)


def _one_spare(served: Served) -> int:
    _wait(lambda: len(_spares(served)) == 1, "the server's spare")
    return _spares(served)[0].pid


def _answering_pid(served: Served, argv: list[str]) -> int:
    """The pid the server names in ``P<pid>`` for a request (then left without "go": nothing runs)."""
    with _raw_request(served, argv) as conn:
        line = conn.makefile("rb").readline()
    assert line.startswith(b"P"), line
    return int(line[1:])


def test_the_next_command_is_served_by_the_spare_and_a_new_one_waits_after_it(served: Served) -> None:
    served.start_server()
    spare = _one_spare(served)
    assert _answering_pid(served, ["swarm", "send", "-t", TEAM, "team-lead", "never sent"]) == spare
    following = _one_spare(served)
    assert following != spare
    assert served.run("send", "-t", TEAM, "team-lead", "sent").returncode == 0
    assert served.lead_texts() == ["sent"]  # the request left without "go" ran nothing
    assert _one_spare(served) not in (spare, following)


def test_a_killed_spare_is_replaced_and_no_command_fails(served: Served) -> None:
    served.start_server()
    os.kill(_one_spare(served), signal.SIGKILL)
    for n in range(3):
        assert served.run("send", "-t", TEAM, "team-lead", f"m{n}").returncode == 0
    assert served.lead_texts() == ["m0", "m1", "m2"]
    _one_spare(served)


def test_a_spare_dies_with_its_server_however_it_ends(served: Served) -> None:
    server = served.start_server()
    spare = _one_spare(served)
    os.kill(server, signal.SIGKILL)  # nobody stops the spare: its hand-off socket closes, and it exits
    _wait(lambda: not psutil.pid_exists(spare) or psutil.Process(spare).status() == psutil.STATUS_ZOMBIE,
          "the spare of a killed server to exit", timeout=10)
    assert served.run("send", "-t", TEAM, "team-lead", "to a new server").returncode == 0
    server = served.wait_for_server(other_than=server)
    spare = _one_spare(served)
    os.kill(server, signal.SIGTERM)
    _wait(lambda: not psutil.pid_exists(spare) or psutil.Process(spare).status() == psutil.STATUS_ZOMBIE,
          "the spare of a stopped server to exit", timeout=10)
    time.sleep(0.2)
    assert served.lead_texts() == ["to a new server"]


def test_a_sigterm_while_the_server_forks_its_next_spare_still_stops_it(served: Served) -> None:
    """Raised inside ``os.fork`` (an at-fork handler runs then), SystemExit is printed and dropped: the server
    used to go on serving after such a SIGTERM. Each round kills the spare, so the server forks a new one, and
    sends the SIGTERM while it may be doing so."""
    for delay in (0.0, 0.0005, 0.001, 0.0015, 0.002, 0.003):
        server = served.start_server() if served.server_pid() is None else served.wait_for_server()
        os.kill(_one_spare(served), signal.SIGKILL)
        time.sleep(delay)
        os.kill(server, signal.SIGTERM)
        _wait(lambda: served.server_pid() is None, f"the server to stop (SIGTERM {delay * 1000:g} ms after)",
              timeout=10)
        _wait(lambda: not _processes_of(served), "its spare to go", timeout=10)
        assert served.server_pid() is None and not served.home.cli_socket_path.exists()  # it ended, as asked
        assert _processes_of(served) == []  # and left nothing: no server, no spare


def _processes_of(served: Served) -> list[int]:
    """Live processes whose command line names the home (the server, its spare, its children)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if str(served.home.root) in " ".join(proc.info["cmdline"] or []) and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc.pid)
        except psutil.Error:
            continue
    return found
