"""A teammate forked from the home's warm CLI server instead of started as an interpreter of its own.

A backend starts ``python -m swarm.cli.entry _teammate ARGS``
(``swarm.cli.entry.TEAMMATE``; ARGS as for ``python -m swarm.teammate``): the **launcher**. When the home's CLI server (``swarm.cli.forkserver``)
answers, the launcher hands it its fds 0-2, environment and argv, and the
server forks the teammate (the **worker**) from a process that has already
imported and built everything a teammate needs: a teammate costs a fork and
its session's start, not ~0.3 s of imports. With no server, the launcher is
the teammate itself, as ``python -m swarm.teammate`` would be.

A subprocess teammate spawned while the server runs has no launcher: the
backend hands the server the same command itself
(``swarm.core.rendezvous.fork_detached``) and the server forks it loose, in a
session of its own (``swarm.cli.served_command._detach``). It is then one process,
the member entry's ``pid``, judged and stopped like an unserved teammate, and
named ``COMM`` as below. What follows is about a teammate behind a launcher
(a tmux pane's, or the home's first teammate, whose launcher started the server).

The launcher stays for the worker's whole life, as the process tmux and the
backend know (the pane's process, the member entry's ``pid``), and the two
live and die together:

- a SIGTERM, SIGINT or SIGHUP to the launcher (``swarm shutdown``'s kill,
  Ctrl-C in the pane, the pane closed) is forwarded to the worker's group:
  the worker does what it would have done itself (a SIGINT — Ctrl-C in the
  pane, or swarm's ``MemberKind.interrupt`` — interrupts its turn,
  ``teammate/pane_input.py``; the others stop it);
- the worker ends: its connection closes, and the launcher exits with its
  status (1 if it was killed);
- the launcher is killed (``kill -9``, or SIGKILL after ``kill_tree``'s
  grace): the worker, which holds the other end of the launcher's
  connection, sees it close and SIGKILLs itself (``Launcher.bind``). A
  watcher thread does this even with the server gone; the server's SIGHUP
  to an abandoned child arrives as well, and the worker reads it the same
  way (its launcher is gone), not as a terminal's hang-up.

The worker records itself in the member entry as ``worker_pid`` and
``worker_start``, beside the launcher's ``pid``, so ``kill_tree`` stops it
directly too and ``swarm status`` and the benchmarks can find it. Its
``/proc/PID/comm`` reads ``swarm-teammate`` (its command line is the server's).
"""

from __future__ import annotations

import os
import select
import signal
import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType

import psutil

from swarm.backends.procs import name_process, process_create_time
from swarm.teammate import TEAMMATE
from swarm.teammate.delivery_worker import COMM as DELIVERY_COMM

Handler = Callable[[int, FrameType | None], None]

COMM = b"swarm-teammate"
"""The worker's process name (``ps``, ``top``): its command line is the server's."""


@dataclass(frozen=True)
class Launcher:
    """The process a backend started for this (forked) teammate, and the connection tying the two together."""

    pid: int
    start: float | None
    conn: socket.socket

    @classmethod
    def of(cls, conn: socket.socket) -> Launcher:
        """The launcher at the other end of ``conn`` (the kernel's word for its pid: SO_PEERCRED)."""
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        pid = int(struct.unpack("3i", creds)[0])
        return cls(pid=pid, start=process_create_time(pid), conn=conn)

    def gone(self) -> bool:
        """The launcher closed its end (it was killed, or exited): nothing reads this teammate's status any more."""
        poller = select.poll()
        poller.register(self.conn.fileno(), select.POLLRDHUP)
        return any(event & (select.POLLRDHUP | select.POLLHUP | select.POLLERR) for _, event in poller.poll(0))

    def bind(self, on_signal: Handler) -> Handler:
        """Tie this process's life to the launcher's; ``on_signal`` wrapped for this process's signals.

        A thread SIGKILLs this process once the launcher is gone, and a SIGHUP
        that arrives with the launcher gone (the server's word for it) does the
        same; any other signal goes to ``on_signal``.
        """
        name_process(COMM)
        threading.Thread(target=self._watch, name="swarm-launcher", daemon=True).start()

        def handler(signum: int, frame: FrameType | None) -> None:
            if signum == signal.SIGHUP and self.gone():
                _killed()
            on_signal(signum, frame)

        return handler

    def _watch(self) -> None:
        try:
            while self.conn.recv(64):
                pass  # the launcher sends nothing after "go": any byte is ignored, only the close counts
        except OSError:
            pass
        _killed()


def _killed() -> None:
    """The launcher was killed: so is this process, as if the kill had reached it itself."""
    os.kill(os.getpid(), signal.SIGKILL)


def teammate_processes(home_root: str) -> list[psutil.Process]:
    """Every live teammate process whose command line names ``home_root`` (or a path in it): launchers, forked
    workers (their command line is their server's) and unserved teammates; and a delivery worker
    (``delivery_worker``, whose command line is its teammate's) that outlived its teammate.

    For tests and benchmarks that look for what is left running (the runtime itself goes by member entries).
    """
    found, workers = [], []
    for proc in psutil.process_iter(["cmdline", "status", "name", "ppid"]):
        cmd = proc.info.get("cmdline") or []
        if not any(home_root in arg for arg in cmd) or proc.info.get("status") == psutil.STATUS_ZOMBIE:
            continue
        if proc.info.get("name") == DELIVERY_COMM.decode():
            workers.append(proc)
            continue
        launched = cmd[1:3] == ["-m", "swarm.teammate"] or cmd[1:4] == ["-m", "swarm.cli.entry", TEAMMATE]
        forked = "swarm.cli.forkserver" in cmd and proc.info.get("name") == COMM.decode()
        if launched or forked:
            found.append(proc)
    teammates = {proc.pid for proc in found}
    return found + [proc for proc in workers if proc.info.get("ppid") not in teammates]
