"""The CLI server's one delivery worker for every teammate it forks (``swarm.teammate.delivery_worker``).

A worker per teammate holds ~3.6 MiB of pages of its own (a forked CPython
copies each page it touches); 64 teammates paid ~230 MiB for them. The CLI
server forks one shared worker instead, once it has warmed up, and gives
each child it forks ahead (its spare) a connection of its own to it
(``SharedWorker.connection``): a child that becomes a teammate speaks to it
as to its own worker (``DeliveryWorker.attach``), a thread of the worker
serving each connection; any other command closes it. Jobs on one
connection run in order, as on a worker of its own; teammates' jobs run side
by side. The worker ends once the server is gone and every teammate it
served has closed its connection (teammates outlive their server). Killed,
each teammate stands in for it as for its own worker, and the server forks
a new one for the teammates that come next. A teammate no server forked
still forks a worker of its own.
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import socket
import threading

from swarm.teammate.delivery_worker import PANE_SIGNALS, SharedSocket, serve_jobs, settle_worker

log = logging.getLogger(__name__)

SHARED_COMM = b"swarm-deliveryd"
"""The shared worker's process name (``ps``, ``top``)."""


class SharedWorker:
    """One worker for every teammate a CLI server forks, each served on a connection of its own by a thread.

    Forked by the server once it has warmed up; each child the server forks
    ahead (its spare) gets a new connection (``connection``), which the child
    uses if it becomes a teammate (``DeliveryWorker.attach``) and closes
    otherwise. A worker per teammate holds ~3.6 MiB of pages of its own; this
    one holds about that once, plus a thread's stack per teammate. It ends
    once the server has closed its end (``close``) and every teammate it
    serves has closed theirs: teammates outlive their server. Killed, each
    teammate stands in for it as for its own worker.
    """

    def __init__(self, pid: int, control: socket.socket) -> None:
        self.pid = pid
        self._control = control

    @classmethod
    def fork(cls) -> SharedWorker | None:
        """The shared worker, forked from this process (the server); None where it cannot be."""
        try:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        except OSError:
            return None
        try:
            pid = os.fork()
        except OSError:
            ours.close()
            theirs.close()
            return None
        if pid == 0:
            status = 1
            try:
                ours.close()
                _serve_shared(theirs)
                status = 0
            except BaseException:  # a bug: said in the server's log
                log.exception("the shared delivery worker failed")
            finally:
                os._exit(status)
        theirs.close()
        return cls(pid, ours)

    def connection(self) -> SharedSocket | None:
        """A new connection for the next child the server forks (the server closes its copy once it has);
        None when the worker is gone."""
        try:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        except OSError:
            return None
        try:
            socket.send_fds(self._control, [b"c"], [theirs.fileno()])
        except OSError:
            ours.close()
            return None
        finally:
            theirs.close()
        return SharedSocket(ours, self.pid)

    def close(self) -> None:
        """No more connections (the server ends, or in a child it forked): the worker ends once its teammates have."""
        self._control.close()


def _serve_shared(control: socket.socket) -> None:
    """The shared worker: a thread per connection the server sends, until the server and every teammate are gone."""
    signal.set_wakeup_fd(-1)
    for signum in (signal.SIGTERM, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)  # the server's handlers: a SIGTERM ends this worker
    settle_worker(SHARED_COMM, keep={control.fileno()}, ignored=tuple(s for s in PANE_SIGNALS if s != signal.SIGTERM))
    gc.freeze()  # what it shares with the server is never scanned (copied); what it makes is collected
    gc.enable()
    threads: list[threading.Thread] = []
    while True:
        try:
            data, fds, _flags, _address = socket.recv_fds(control, 16, 1)
        except OSError:
            break
        if not data:
            for fd in fds:
                os.close(fd)
            break  # the server ended
        for fd in fds:
            thread = threading.Thread(target=_connection, args=(socket.socket(fileno=fd),), name="swarm-delivery")
            thread.start()
            threads.append(thread)
        threads = [thread for thread in threads if thread.is_alive()]
    for thread in threads:
        thread.join()


def _connection(sock: socket.socket) -> None:
    """One teammate's jobs on the shared worker (a bug ends its connection, and the teammate stands in)."""
    try:
        with sock:
            serve_jobs(sock, own_log=False)
    except Exception:
        log.exception("the shared delivery worker failed a teammate's connection")
