"""A delivery's durable side jobs in a child process, so the turn keeps the interpreter to itself.

Before a turn, two durable writes run beside it (``swarm.teammate.delivery``):
the fsync of the transcript line that records the turn's messages as
delivered, then the prune of those messages from the inbox (its lock, a
rewrite, an fsync). Run on a thread, they took the interpreter's lock from the
turn at each of their ~25 system calls, and on two cores each hand-over costs
the turn tens of microseconds. A child forked from the teammate does them with
an interpreter of its own::

    teammate ── a job: the transcript's descriptor (SCM_RIGHTS) and the keys ──▶ worker
             ◀── "s" once fsynced, then "p" once pruned; or "e" and why ───────

The worker is forked once, first thing in the teammate's process (``fork``):
a forked process keeps a copy of each page its parent had made its own before
the fork and changes after, so the earlier, the smaller (a served teammate's
worker: ~3.6 MiB of pages of its own). It holds no descriptor of the
teammate's but the standard streams, its logs and its socket, ignores the signals a pane or a process group gets (the teammate
decides), and ends when its socket closes: when the teammate closes it, or
ends however it ends, after finishing the job at hand. A job can be done twice
without harm (an fsync, a prune by key), so a worker that died mid-job is
replaced by doing the job again in the teammate (``WorkerUnavailable``).

A teammate forked from the CLI server does not fork one: it is given a
connection to the server's one shared worker (``swarm.teammate.shared_worker``,
``DeliveryWorker.attach``), which serves each teammate's jobs the same way.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import signal
import socket
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from swarm.backends.procs import name_process
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.errors import StorageError
from swarm.teammate.pane import setup_logging

log = logging.getLogger(__name__)

COMM = b"swarm-delivery"
"""The worker's process name (``ps``, ``top``)."""


MAX_JOB = 1 << 16
"""Bytes of one job at most (one datagram); a larger batch is pruned on the delivery thread."""

ATTACH_WAIT = 2.0
"""Seconds a teammate waits for the CLI server's shared worker to say it serves it (else it forks its own)."""

REPLY_WAIT = 60.0
"""Seconds a teammate waits for its worker's next reply before letting it go (an fsync and a prune take ms)."""

REAP_WAIT = 2.0
"""Seconds ``close`` waits for the worker to end on its own before it is killed."""

PANE_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGTSTP)
"""Signals a pane (Ctrl-C, Ctrl-\\, Ctrl-Z) or a signal to the process group would bring: the teammate's to
handle; the worker ends once the teammate does."""

READY, SYNCED, PRUNED, FAILED = b"r", b"s", b"p", b"e"


@dataclass(frozen=True)
class Inbox:
    """Whose inbox a job prunes."""

    home: Home
    team: str
    agent: str


@dataclass(frozen=True)
class SharedSocket:
    """A teammate's end of a socket the CLI server's shared worker serves (``SharedWorker.connection``)."""

    sock: socket.socket
    pid: int
    """The shared worker's."""


class WorkerUnavailable(Exception):
    """The worker cannot take a job (it ended, or the job is more than one message carries), or ended before it
    told how a job went (what the job did is unknown): the teammate does the job itself."""


class DeliveryWorker:
    """The teammate's end of a worker (``fork``); one job at a time, each followed through ``Job``."""

    def __init__(self, sock: socket.socket, pid: int, *, own: bool = True) -> None:
        self._sock = sock
        self.pid = pid
        self.own = own
        """Forked by this process (ended and reaped by ``close``), or the CLI server's shared worker."""
        self._lock = threading.Lock()
        self.alive = True

    @classmethod
    def attach(cls, connection: SharedSocket | None) -> DeliveryWorker | None:
        """This teammate's connection to its CLI server's shared worker (``SharedWorker``), once the worker says
        it serves it; None without one, or when the worker is gone (then ``fork`` one of its own)."""
        if connection is None:
            return None
        worker = cls(connection.sock, connection.pid, own=False)
        try:
            if worker.reply(ATTACH_WAIT) == READY:  # a worker that does not answer (stopped, stuck) is not waited for
                return worker
        except WorkerUnavailable:
            pass
        worker.close()
        return None

    @classmethod
    def fork(cls) -> DeliveryWorker | None:
        """A new worker, set up (its inherited descriptors closed) when this returns; None where no process
        can be forked or it did not start. Fork it first thing (see the module docstring): forked after the
        teammate's set-up, a worker holds ~4.4 MiB of pages of its own instead of ~3.6."""
        try:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        except OSError as exc:  # no such sockets here: the delivery thread does the jobs instead
            log.warning("no delivery worker, the delivery thread does its jobs", extra={"reason": str(exc)})
            return None
        try:
            with warnings.catch_warnings():  # 3.12+ warns on fork beside threads: the child runs _serve alone,
                warnings.simplefilter("ignore", DeprecationWarning)  # taking no lock another thread may hold
                pid = os.fork()
        except OSError as exc:  # out of processes or memory
            ours.close()
            theirs.close()
            log.warning("no delivery worker, the delivery thread does its jobs", extra={"reason": str(exc)})
            return None
        if pid == 0:
            status = 1
            try:
                ours.close()
                _serve(theirs)
                status = 0
            except BaseException:  # a bug: said where the teammate's warnings go (stderr until logging is set up)
                log.exception("the delivery worker failed")
            finally:
                os._exit(status)  # never back into the teammate's code
        theirs.close()
        worker = cls(ours, pid)
        try:
            if worker.reply() == READY:  # set up (its inherited descriptors closed) before the first job
                return worker
        except WorkerUnavailable:
            pass
        log.warning("the delivery worker did not start, the delivery thread does its jobs")
        worker.close()
        return None

    def submit(self, sync_fd: int | None, inbox: Inbox, keys: list[str]) -> Job:
        """Send a job: fsync ``sync_fd`` (a descriptor the worker receives a copy of), then prune ``keys`` from
        ``inbox``.

        ``WorkerUnavailable`` if it cannot be sent (the worker ended, or the keys are more than a job carries).
        """
        payload = json.dumps({"home": str(inbox.home.root), "team": inbox.team, "agent": inbox.agent,
                              "keys": keys}).encode()
        if len(payload) > MAX_JOB:
            raise WorkerUnavailable("the batch is larger than a job carries")
        try:
            socket.send_fds(self._sock, [payload], [sync_fd] if sync_fd is not None else [])
        except OSError as exc:
            self._ended()
            raise WorkerUnavailable(str(exc)) from exc
        return Job(self, synced=sync_fd is None)

    def reply(self, wait: float | None = None) -> bytes:
        """The next reply; ``WorkerUnavailable`` if the worker ended first, or did not answer within ``wait``
        seconds (default ``REPLY_WAIT``: stopped or stuck; it is let go, and the teammate does its jobs itself)."""
        if not self.alive:
            raise WorkerUnavailable("the delivery worker was let go")
        try:
            timeout = REPLY_WAIT if wait is None else wait
            if self._sock.gettimeout() != timeout:  # set once, not per reply (each set is two fcntl calls)
                self._sock.settimeout(timeout)
            data = self._sock.recv(4096)
        except OSError as exc:  # a timeout too
            data = b""
            log.warning("lost the delivery worker", extra={"reason": str(exc) or type(exc).__name__})
        if not data:
            self._ended()
            raise WorkerUnavailable("the delivery worker ended")
        return data

    def _ended(self) -> None:
        """The worker is gone (said once: a worker that dies is a bug to look into, or was killed)."""
        if self.alive:
            log.warning("the delivery worker ended; the teammate does its jobs itself", extra={"pid": self.pid})
        self.alive = False

    def close(self) -> None:
        """End the worker: its socket closed, it finishes the job at hand and exits; reaped here (killed after
        ``REAP_WAIT``)."""
        with self._lock:
            if self._sock.fileno() == -1:
                return
            self._sock.close()
        self.alive = False
        if not self.own:
            return  # the shared worker's thread for this teammate ends after the job at hand
        deadline = time.monotonic() + REAP_WAIT
        while True:
            try:
                pid, _ = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return  # reaped already
            if pid != 0:
                return
            if time.monotonic() >= deadline:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
                return
            time.sleep(0.002)


class Job:
    """One job sent to a worker: wait for its fsync (``synced``), then its prune (``pruned``).

    When the worker's fsync or prune failed, ``StorageError``: from ``synced``
    each time (as ``OwedSync.pay``), from ``pruned`` once (as ``Pruning.wait``);
    a refused fsync prunes nothing. ``WorkerUnavailable`` when the worker ended before
    saying how the job went.
    """

    def __init__(self, worker: DeliveryWorker, *, synced: bool) -> None:
        self._worker = worker
        self._synced = synced
        self._pruned = False
        self._error: StorageError | None = None
        self._told = False
        self._lock = threading.Lock()

    def synced(self) -> None:
        with self._lock:
            if not self._synced:
                self._take(self._worker.reply())
            if self._error is not None:
                raise self._error

    def pruned(self) -> None:
        with self._lock:
            while not self._pruned:
                self._take(self._worker.reply())
            if self._error is not None and not self._told:
                self._told = True
                raise self._error

    def _take(self, reply: bytes) -> None:
        if reply == SYNCED:
            self._synced = True
            return
        self._synced = self._pruned = True  # PRUNED, or FAILED: the job is over
        if reply != PRUNED:
            self._error = StorageError(reply[1:].decode("utf-8", "replace") or "the delivery worker failed")


def _serve(sock: socket.socket) -> None:
    """The worker: jobs in order until the socket closes."""
    settle_worker(COMM, keep={sock.fileno(), *_log_descriptors()}, ignored=PANE_SIGNALS)
    serve_jobs(sock, own_log=True)


def settle_worker(name: bytes, keep: set[int], ignored: tuple[signal.Signals, ...]) -> None:
    """A worker's start: no collector, the pane's signals ignored, its name, none of its parent's files."""
    gc.disable()  # nothing it does makes cycles; a collection would touch (copy) the pages it shares
    for signum in ignored:
        signal.signal(signum, signal.SIG_IGN)
    name_process(name)
    _close_inherited(keep={0, 1, 2, *keep})


def serve_jobs(sock: socket.socket, *, own_log: bool) -> None:
    """One teammate's jobs in order until its socket closes; ``own_log``: the first job sets up logging to that
    teammate's log (a shared worker logs where its CLI server does). A teammate gone mid-job ends them."""
    try:
        _serve_jobs(sock, own_log)
    except (BrokenPipeError, ConnectionResetError):
        return  # nobody left to tell: the teammate stands in, or has ended


def _serve_jobs(sock: socket.socket, own_log: bool) -> None:
    sock.send(READY)
    mailboxes: dict[tuple[str, str], Mailbox] = {}
    while True:
        try:
            data, fds, _flags, _address = socket.recv_fds(sock, MAX_JOB, 1)
        except OSError:
            return
        if not data:
            for fd in fds:
                os.close(fd)
            return  # the teammate closed its end, or ended
        job = json.loads(data)
        where = (job["home"], job["team"])
        if where not in mailboxes:
            if not mailboxes and own_log:  # forked before the teammate set up its log: its warnings go there too
                setup_logging(Home(Path(job["home"])), job["team"], job["agent"], f"{job['agent']} (delivery)")
            mailboxes[where] = Mailbox(Home(Path(job["home"])), job["team"])
        mailbox = mailboxes[where]
        sock.send(_run(sock, job["keys"], fds[0] if fds else None,
                       lambda keys: mailbox.acknowledge(job["agent"], keys)))


def _run(sock: socket.socket, keys: list[str], sync_fd: int | None, prune: Callable[[list[str]], object]) -> bytes:
    """One job: ``SYNCED`` sent once the fsync is done; returns the job's last reply (pruned, or why not)."""
    if sync_fd is not None:
        try:
            os.fsync(sync_fd)
        except OSError as exc:
            return FAILED + f"cannot sync the transcript: {exc.strerror or exc}".encode()
        finally:
            os.close(sync_fd)
        sock.send(SYNCED)
    try:
        if keys:
            prune(keys)
    except StorageError as exc:
        return FAILED + str(exc).encode()
    except Exception as exc:  # a bug must not leave the teammate waiting: it hears it as the prune's failure
        log.exception("delivery worker failed")
        return FAILED + f"the inbox could not be pruned: {type(exc).__name__}: {exc}".encode()
    return PRUNED


def _log_descriptors() -> set[int]:
    """Descriptors the logging handlers write to (a tmux teammate logs to a file): kept, so the worker's
    warnings reach the teammate's log."""
    found = set()
    for handler in logging.getLogger().handlers:
        stream = getattr(handler, "stream", None)
        try:
            found.add(stream.fileno())
        except (AttributeError, OSError, ValueError):
            continue
    return found


def _close_inherited(keep: set[int]) -> None:
    """Close what the fork copied but the worker has no use for (the teammate's files, sockets and locks):
    holding them, it would keep them open after the teammate ended."""
    try:
        open_now = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return  # no /proc: what it holds is let go when it ends, right after the teammate
    for fd in open_now:
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                continue
