"""The CLI server: a warm process that forks one child per served ``swarm`` command.

``python -m swarm.cli.forkserver HOME_ROOT``, started detached by a client
(``swarm.cli.entry``, which also documents the wire format) that found no
server. It listens on ``Home.cli_socket_path``, imports the CLI, every
served command's modules and a teammate's once, then serves. Each request
forks a child that takes over the client's fds 0-2, cwd, umask, environment
and argv, and runs ``swarm.cli.main.main()`` as a fresh process would: a send
costs the fork and the work, not the ~150 ms of imports. A ``_teammate``
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
  process group, as a terminal's command would.

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
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import NoReturn

from swarm.cli.code_watch import CodeWatch, code_state
from swarm.cli.entry import SERVED, headless
from swarm.cli.rehearsal import rehearse
from swarm.core.home import Home, ensure_dir
from swarm.core.rendezvous import DETACH, GO, MAGIC, package_dir
from swarm.startup import hold_collector, startup_done
from swarm.teammate import TEAMMATE

IDLE_SECONDS = 300.0
"""How long a server with nothing to do stays; ``SWARM_CLI_SERVER_IDLE`` overrides (tests)."""
HEADLESS_IDLE_SECONDS = 2.0
"""The same for a server a headless or CI run started: it ends within seconds of the run's last teammate."""
TICK = 1.0
REQUEST_TIMEOUT = 5.0
"""A client that connected has this long to send its request, and its child this long to be told "go"."""
MAX_BODY = 8 * 1024 * 1024


@dataclass(frozen=True)
class Request:
    """One command as the client would have run it."""

    prefix: str
    """The client interpreter's ``sys.prefix``: its venv."""
    package: str
    cwd: bytes
    umask: int
    argv: list[str]
    env: dict[bytes, bytes]

    @classmethod
    def parse(cls, body: bytes) -> Request:
        fields = body.split(b"\0")
        if len(fields) < 6 or fields[0] != MAGIC:
            raise ValueError("not a swarm CLI request")
        argc = int(fields[5])
        argv, env = fields[6:6 + argc], fields[6 + argc:]
        if len(argv) != argc or not all(b"=" in e for e in env):
            raise ValueError("malformed swarm CLI request")
        return cls(prefix=os.fsdecode(fields[1]), package=os.fsdecode(fields[2]), cwd=fields[3],
                   umask=int(fields[4], 8), argv=[os.fsdecode(a) for a in argv],
                   env=dict(e.split(b"=", 1) for e in env))


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

    def run(self) -> None:
        last = time.monotonic()
        while True:
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
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                self._child(conn)
            try:
                os.setpgid(pid, pid)  # also done by the child: a signal to the group never misses
            except OSError:
                pass
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

    def _child(self, conn: socket.socket) -> NoReturn:
        """Become the client's command: its fds, cwd, umask, environment and argv; then run the CLI."""
        status = 1
        fds: list[int] = []
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
            conn.settimeout(REQUEST_TIMEOUT)
            try:
                request, fds = _receive(conn)
            except (OSError, ValueError):
                os._exit(1)  # gone or nonsense: nothing ran
            if (request.prefix, request.package, request.env.get(b"PYTHONPATH")) != (
                    sys.prefix, package_dir(), os.environb.get(b"PYTHONPATH")):
                conn.sendall(b"S\n")  # another installation shares this home: it runs its own commands
                os._exit(0)
            conn.sendall(b"P%d\n" % os.getpid())
            answer = conn.recv(1)
            if answer == DETACH:
                _detach(conn, request, fds)
            if answer != GO:
                os._exit(1)  # the client gave up before "go": it runs the command itself
            conn.settimeout(None)
            _take_over(request, fds)
            try:
                if request.argv[1:2] == [TEAMMATE]:
                    status = _teammate(conn)
                else:
                    import swarm.cli.main

                    swarm.cli.main.main()
                    status = 0
            except SystemExit as exc:  # click's and argparse's way out (--help, a usage error)
                status = _exit_status(exc)
        except BaseException:
            traceback.print_exc()
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            except OSError:
                pass
            try:
                conn.sendall(b"X%d\n" % status)
            except OSError:
                pass
            os._exit(status)


def _detach(conn: socket.socket, request: Request, fds: list[int]) -> NoReturn:
    """Fork the requested teammate loose (``swarm.core.rendezvous.fork_detached``): in a session of its own, tied
    to no launcher and no connection, reparented once this child exits. The teammate answers its own pid once it
    has left this child's process group; ``N`` when the request is not a teammate's (nothing ran)."""
    if request.argv[1:2] != [TEAMMATE]:
        conn.sendall(b"N\n")
        os._exit(1)
    if os.fork() != 0:
        os._exit(0)  # the teammate answers itself, once it is out of this child's process group
    status = 1
    try:
        os.setsid()  # first: a SIGHUP the server sends this child's group once the client hangs up misses it
        conn.sendall(b"W%d\n" % os.getpid())
        conn.close()
        _take_over(request, fds)
        from swarm.teammate.__main__ import main
        from swarm.teammate.served import name_process

        name_process()
        status = main(sys.argv[2:])
    except SystemExit as exc:
        status = _exit_status(exc)
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:
            pass
        os._exit(status)


def _teammate(conn: socket.socket) -> int:
    """Become the teammate the client launches, tied to that launcher's life (``swarm.teammate.served``)."""
    from swarm.teammate.__main__ import main
    from swarm.teammate.served import Launcher

    return main(sys.argv[2:], launcher=Launcher.of(conn))


def _take_over(request: Request, fds: list[int]) -> None:
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    fds.clear()
    encoding = sys.stdout.encoding or "utf-8"
    sys.stdin = open(0, encoding=encoding, closefd=False)
    sys.stdout = open(1, "w", buffering=1 if os.isatty(1) else -1, encoding=encoding, closefd=False)
    sys.stderr = open(2, "w", buffering=1, encoding=encoding, errors="backslashreplace", closefd=False)
    # the terminal size (shutil.get_terminal_size) is read from these: the caller's, not /dev/null
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr  # type: ignore[misc]
    os.chdir(request.cwd)
    os.umask(request.umask)
    os.environ.clear()
    os.environb.update(request.env)
    sys.argv = request.argv


def _exit_status(exc: SystemExit) -> int:
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    from swarm.cli.render import echo  # the forked command's own output path: click is loaded by now

    echo(str(exc.code), err=True)
    return 1


def _receive(conn: socket.socket) -> tuple[Request, list[int]]:
    head, fds, _, _ = socket.recv_fds(conn, 8, 3)
    if len(fds) != 3:
        for fd in fds:
            os.close(fd)
        raise ValueError("a request carries exactly fds 0-2")
    try:
        while len(head) < 8:
            more = conn.recv(8 - len(head))
            if not more:
                raise ValueError("request cut short")
            head += more
        size = int(head)
        if not 0 < size <= MAX_BODY:
            raise ValueError("request too large")
        chunks, left = [], size
        while left:
            chunk = conn.recv(min(left, 1 << 20))
            if not chunk:
                raise ValueError("request cut short")
            chunks.append(chunk)
            left -= len(chunk)
        return Request.parse(b"".join(chunks)), fds
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise


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


def _warm() -> None:
    """Import the CLI, every served command's modules and a teammate's, as a served child would; and, when
    the environment it was started with has credentials for Claude (a real-model team's), the ``anthropic``
    SDK, whose import costs each teammate ~1 s of CPU and ~47 MB unshared otherwise."""
    from swarm.agent.tool_catalog import preload_schemas
    from swarm.cli.main import COMMANDS
    from swarm.core.frames import build_frames
    from swarm.core.protocol import build_models
    from swarm.core.watch import preload as preload_watch
    from swarm.models.credentials import find_credentials

    for name in sorted(SERVED):
        module, _, attr = COMMANDS[name].partition(":")
        getattr(importlib.import_module(module), attr)
    importlib.import_module("swarm.teammate.__main__")
    build_models()
    build_frames()
    preload_watch()  # inotify, which every teammate and waiting command uses
    preload_schemas()  # the tools' input schemas, which every teammate's first model request sends
    "".encode("utf-16-le")  # a codec the lead's signature uses, found late otherwise
    rehearse()  # a send's code run and specialised here: a child copies ~1/3 fewer pages (swarm.cli.rehearsal)
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
    _warm()
    startup_done()
    code = CodeWatch(before)  # a change while the imports ran (an upgrade racing the start) makes the first request stale
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)  # wakes the select through the pipe
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    server = Server(home=home, idle=idle, listener=listener, inode=os.stat(home.cli_socket_path).st_ino,
                    lock_fd=lock_fd, wakeup=(wake_r, wake_w), code=code)
    try:
        server.run()
    finally:
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
