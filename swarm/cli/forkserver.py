"""The CLI server: a warm process that forks one child per served ``swarm`` command.

``python -m swarm.cli.forkserver HOME_ROOT``, started detached by a client
(``swarm.cli.entry``, which also documents the wire format) that found no
server. It listens on ``Home.cli_socket_path``, imports the CLI, every
served command's modules and a teammate's once, then serves. Each request
gets a child that takes over the client's fds 0-2, cwd, umask, environment
and argv, and runs ``swarm.cli.main.main()`` as a fresh process would
(``swarm.cli.served_command``): a send costs the work, not the ~150 ms of
imports. The child is forked ahead, while the server idles (``Spare``), and
handed the connection, so not even the fork is on the command's way. A ``_teammate``
request's child becomes that teammate instead (``swarm.teammate.served``):
~0.3 s of imports saved per teammate, and ~1 s more for a real-model teammate when the server was started
with credentials for Claude (it then imports the ``anthropic`` SDK too).

One per home, and nothing left behind:
- the server flocks ``Home.cli_lock_path`` for its whole life (and writes its
  pid there); a second one exits at once;
- it exits after ``IDLE_SECONDS`` with no request and no child (``HEADLESS_IDLE_SECONDS`` when a headless
  or CI run started it, ``swarm.cli.entry.headless``: its environment is its starter's), on SIGTERM,
  when its socket file is removed or replaced, or when the home is gone;
- its code must be what is installed: a request that finds a loaded swarm
  module file or an import directory (site-packages) changed since start-up
  (``swarm.cli.code_watch``) is answered "stale" (the client runs the
  command itself) and the server exits, so an upgrade is never served by old code;
- a child whose client vanished (killed, terminal closed) gets SIGHUP, to its
  process group, as a terminal's command would;
- the spare ends with the server: it is killed when the server ends, and
  exits by itself when the server was killed (its hand-off socket closes).

Trust: the socket lives in the home's 0700 ``run`` directory with mode 0600,
and a peer whose uid (SO_PEERCRED) is not the server's is refused.
"""

from __future__ import annotations

import fcntl
import importlib
import os
import select
import signal
import socket
import struct
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from swarm.cli.code_watch import CodeWatch, code_state
from swarm.cli.entry import SERVED, headless
from swarm.cli.rehearsal import rehearse
from swarm.cli.served_command import run_request
from swarm.core.home import Home, ensure_dir
from swarm.startup import hold_collector, startup_done

if TYPE_CHECKING:
    from swarm.teammate.delivery_worker import SharedSocket
    from swarm.teammate.shared_worker import SharedWorker

IDLE_SECONDS = 300.0
"""How long a server with nothing to do stays; ``SWARM_CLI_SERVER_IDLE`` overrides (tests)."""
HEADLESS_IDLE_SECONDS = 2.0
"""The same for a server a headless or CI run started: it ends within seconds of the run's last teammate."""
TICK = 1.0


@dataclass(frozen=True)
class Spare:
    """A child forked while the server idles, waiting for the next connection: the fork (~2 ms of a ~55 MB
    process) and the child's set-up are then off that command's way. It gets the connection over ``handoff``
    (SCM_RIGHTS); the server keeps its own copy, watched as any child's."""

    pid: int
    handoff: socket.socket


SPARE_NAME = b"swarm-spare"
"""A waiting spare's process name (``ps``); it takes back the server's once it has a connection."""


def _handed_over(handoff: socket.socket, server_name: bytes | None) -> socket.socket:
    """In a spare: block until the server hands over a connection, then take the server's name back; exit when the
    server closed the hand-off."""
    from swarm.backends.procs import name_process  # imported by the server's warm-up: nothing to load here

    try:
        _, fds, _, _ = socket.recv_fds(handoff, 1, 1)
    except OSError:
        os._exit(0)
    handoff.close()
    if len(fds) != 1:
        os._exit(0)  # the server ended (or stopped this spare): nothing to serve
    if server_name is not None:
        name_process(server_name)
    return socket.socket(fileno=fds[0])


def _stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (OSError, ChildProcessError):
        pass


@dataclass
class Server:
    home: Home
    idle: float
    listener: socket.socket
    inode: int
    """The socket file's inode as bound: another inode at that path means this server was replaced."""
    lock_fd: int
    wakeup: tuple[int, int]
    code: CodeWatch
    children: dict[int, socket.socket] = field(default_factory=dict)
    """Live child pid -> its client's connection (watched: EOF means the client is gone)."""
    abandoned: dict[int, socket.socket] = field(default_factory=dict)
    """Children whose client is gone: signalled, waiting to be reaped."""
    spare: Spare | None = None
    """The child forked ahead of the next connection (``Spare``); none while one could not be forked."""
    stopping: bool = False
    """Set by SIGTERM: the loop ends at its next turn."""
    shared: SharedWorker | None = None
    """The delivery worker every teammate forked here uses (``swarm.teammate.shared_worker``)."""

    def run(self) -> None:
        last = time.monotonic()
        while not self.stopping:
            if self.spare is None:
                self._fork_spare()
            poller = select.poll()
            poller.register(self.listener, select.POLLIN)
            poller.register(self.wakeup[0], select.POLLIN)
            watched = {conn.fileno(): conn for conn in self.children.values()}
            for fd in watched:
                poller.register(fd, select.POLLRDHUP)  # the client hung up; its "go" byte is not an event
            for fd, _ in poller.poll(TICK * 1000):
                if fd == self.listener.fileno():
                    last = time.monotonic()
                    if not self._accept():
                        return  # stale code: the client runs the command; the next call starts a new server
                elif fd == self.wakeup[0]:
                    _drain(self.wakeup[0])
                elif fd in watched:
                    self._client_gone(watched[fd])
            self._reap()
            if self.children:
                last = time.monotonic()
            if time.monotonic() - last > self.idle or not _still_ours(self.home, self.inode):
                return

    def _accept(self) -> bool:
        """Fork a child for one connection (it reads the request: a silent client stalls nobody else)."""
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return True
        try:
            if _peer_uid(conn) != os.getuid():
                return True
            if self.code.changed():
                conn.sendall(b"S\n")  # nothing ran: the client runs the command itself
                return False
            pid = self._hand_to_spare(conn)
            if pid is None:  # no spare (it died, or none could be forked): one now
                self._fork_spare()
                pid = self._hand_to_spare(conn)
            if pid is None:
                return True  # no child at all: closed without "P", nothing ran; the client runs the command
            self.children[pid] = conn
            conn = None  # type: ignore[assignment]  # kept, watched until the child is reaped
            return True
        except OSError:
            return True  # a client that went away: nothing ran
        finally:
            if conn is not None:
                conn.close()

    def _client_gone(self, conn: socket.socket) -> None:
        for pid, watched in list(self.children.items()):
            if watched is conn:
                try:
                    os.killpg(pid, signal.SIGHUP)
                except OSError:
                    pass
                self.abandoned[pid] = self.children.pop(pid)

    def _reap(self) -> None:
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None) or self.abandoned.pop(pid, None)
            if conn is not None:
                conn.close()
            if self.shared is not None and self.shared.pid == pid:
                self.shared.close()
                self.shared = None  # forked again for the next spare
            if self.spare is not None and self.spare.pid == pid:
                self.spare.handoff.close()
                self.spare = None  # forked again at the top of the loop

    def _fork_spare(self) -> None:
        """Fork the child that will serve the next connection, now rather than on the next command's way."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        delivery = self._delivery_connection()
        sys.stderr.flush()
        from swarm.backends.procs import name_process  # imported by the server's warm-up: nothing to load here

        # the spare is born with its name (the server wears it for the fork): ``ps`` never shows a spare that looks
        # like a child serving a command
        server_name = name_process(SPARE_NAME)
        try:
            pid = os.fork()
        except OSError:
            if server_name is not None:
                name_process(server_name)
            ours.close()
            theirs.close()
            if delivery is not None:
                delivery.sock.close()
            return  # the next connection forks its child itself
        if pid == 0:
            ours.close()
            self._prepare()
            run_request(_handed_over(theirs, server_name), delivery)  # the client's command (``served_command``)
        if server_name is not None:
            name_process(server_name)
        theirs.close()
        if delivery is not None:
            delivery.sock.close()  # the child's now
        try:
            os.setpgid(pid, pid)  # also done by the child: a signal to the group never misses
        except OSError:
            pass
        self.spare = Spare(pid, ours)

    def _delivery_connection(self) -> SharedSocket | None:
        """A connection to the shared delivery worker for the next child; the worker forked (again) if gone."""
        if self.shared is None:
            from swarm.teammate.shared_worker import SharedWorker  # a small module on what the warm-up imported

            self.shared = SharedWorker.fork()
        return self.shared.connection() if self.shared is not None else None

    def _hand_to_spare(self, conn: socket.socket) -> int | None:
        """The spare's pid once it holds ``conn``; None when there is no spare to take it (gone: it is stopped)."""
        spare, self.spare = self.spare, None
        if spare is None:
            return None
        try:
            socket.send_fds(spare.handoff, [b"C"], [conn.fileno()])
            return spare.pid
        except OSError:
            _stop(spare.pid)
            return None
        finally:
            spare.handoff.close()

    def close_spare(self) -> None:
        """The server ends: its spare, which would end on its own once the hand-off socket closes, is stopped."""
        spare, self.spare = self.spare, None
        if spare is not None:
            spare.handoff.close()
            _stop(spare.pid)

    def _prepare(self) -> None:
        """In a forked child: its own process group and signals, none of the server's fds. Any failure ends it."""
        try:
            os.setpgid(0, 0)
            signal.set_wakeup_fd(-1)
            for signum in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
                signal.signal(signum, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            self.listener.close()
            self.code.close()  # the server's watch, not this command's
            for fd in (self.lock_fd, *self.wakeup):
                os.close(fd)
            for other in (*self.children.values(), *self.abandoned.values()):
                other.close()
            if self.shared is not None:
                self.shared.close()  # the server's end: the worker must see it close when the server ends
        except BaseException:
            os._exit(1)


def _peer_uid(conn: socket.socket) -> int:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[1])


def _still_ours(home: Home, inode: int) -> bool:
    try:
        return os.stat(home.cli_socket_path).st_ino == inode and home.root.is_dir()
    except OSError:
        return False


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 512):
            pass
    except BlockingIOError:
        pass


def _listen(path: Path) -> socket.socket:
    """Listen on the home's socket: bound and listening under a temp name, then renamed into place.

    So a socket file at ``path`` always answers: a client never meets one that
    refuses (and runs its command itself, starting a second server) while this
    one starts; one that connects while the server still imports waits in the
    backlog (a burst of teammates is served, not each importing on its own).
    The caller holds the lock, so whatever is at ``path`` is a dead server's.
    """
    temp = path.with_name(f"{path.name}.{os.getpid()}")
    try:
        temp.unlink()
    except FileNotFoundError:
        pass
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(os.fspath(temp))
    finally:
        os.umask(old)
    listener.listen(128)
    os.replace(temp, path)
    return listener


def _warm(home: Home) -> None:
    """Import the CLI, every served command's modules and a teammate's, as a served child would; and, when
    the environment it was started with has credentials for Claude (a real-model team's), the ``anthropic``
    SDK, whose import costs each teammate ~1 s of CPU and ~47 MB unshared otherwise."""
    from swarm.agent.tool_catalog import preload_schemas
    from swarm.cli.main import COMMANDS
    from swarm.core.frames import build_validators
    from swarm.core.watch import preload as preload_watch
    from swarm.models.credentials import find_credentials

    for name in sorted(SERVED):
        module, _, attr = COMMANDS[name].partition(":")
        getattr(importlib.import_module(module), attr)
    importlib.import_module("swarm.teammate.__main__")
    importlib.import_module("nacl.signing")  # a teammate checks the lead's signatures with it (core.signing)
    build_validators()
    preload_watch()  # inotify, which every teammate and waiting command uses
    preload_schemas()  # the tools' input schemas, which every teammate's first model request sends
    "".encode("utf-16-le")  # a codec the lead's signature uses, found late otherwise
    rehearse(home.run_dir / "rehearsal")  # a send run and specialised here: a child copies ~1/3 fewer pages
    if find_credentials(os.environ) is not None:
        from swarm.models.anthropic_provider import preload_sdk

        preload_sdk()


def serve(root: Path, idle: float) -> int:
    home = Home(root.absolute())
    os.chdir("/")  # hold no directory busy (sys.path is absolute by now); each child takes its client's
    if not home.root.is_dir():
        return 0  # a home is made by the commands that make teams, never by its server
    ensure_dir(home.run_dir)
    lock_fd = os.open(home.cli_lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(lock_fd)
        return 0  # this home has a server
    os.ftruncate(lock_fd, 0)
    os.pwrite(lock_fd, b"%d\n" % os.getpid(), 0)
    log_fd = os.open(home.cli_log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.dup2(log_fd, 2)
    os.close(log_fd)
    listener = _listen(home.cli_socket_path)  # before the imports: who connects meanwhile waits, not re-imports
    hold_collector()
    before = code_state()
    _warm(home)
    startup_done()
    code = CodeWatch(before)  # a change while the imports ran (an upgrade racing the start) makes the first request stale
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)  # wakes the select through the pipe
    server = Server(home=home, idle=idle, listener=listener, inode=os.stat(home.cli_socket_path).st_ino,
                    lock_fd=lock_fd, wakeup=(wake_r, wake_w), code=code)

    def stop(signum: int, frame: object) -> None:
        # a flag, not SystemExit: raised inside ``os.fork`` (the spare's), an exception is printed and dropped
        server.stopping = True

    signal.signal(signal.SIGTERM, stop)  # the wake-up pipe ends the loop's wait
    try:
        server.run()
    finally:
        server.close_spare()
        if server.shared is not None:
            server.shared.close()  # it ends once the teammates it serves have
        code.close()
        if _still_ours(home, server.inode):
            home.cli_socket_path.unlink()  # before the lock goes: no new server can have bound it yet
        listener.close()
    return 0


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: python -m swarm.cli.forkserver HOME_ROOT (started by `swarm` itself)", file=sys.stderr)
        return 2
    idle = float(os.environ.get("SWARM_CLI_SERVER_IDLE",
                                HEADLESS_IDLE_SECONDS if headless(os.environ) else IDLE_SECONDS))
    return serve(Path(sys.argv[1]), idle)


if __name__ == "__main__":
    sys.exit(main())
