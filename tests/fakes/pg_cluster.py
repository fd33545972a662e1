"""A throwaway PostgreSQL cluster for tests and CI: initdb in a temp dir, on a loopback port, as an unprivileged
user (CI runs as root, and PostgreSQL refuses to run as root).

    python -m tests.fakes.pg_cluster start DIR   # prints the URL
    python -m tests.fakes.pg_cluster stop DIR

The session fixture ``postgres_url`` (tests/conftest.py) uses the cluster
``$SWARM_TEST_POSTGRES`` names (``.ci/run`` starts one) or starts its own.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

USER = "postgres"
"""The unprivileged user the server runs as when the tests run as root (made with ``useradd`` if missing)."""
FALLBACK_USER = "swarm-pg"
DB_USER = "swarm"
DB_NAME = "swarm"


def bin_dir() -> Path:
    """Where ``initdb``/``pg_ctl`` are: on PATH, or Debian's ``/usr/lib/postgresql/<v>/bin``."""
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]))
    if not versions:
        raise RuntimeError("PostgreSQL is not installed: apt-get install postgresql")
    return Path(versions[-1]).parent


def _runner() -> list[str]:
    """The command prefix that runs a server program as an unprivileged user (nothing when not root)."""
    if os.geteuid() != 0:
        return []
    for user in (USER, FALLBACK_USER):
        try:
            pwd.getpwnam(user)
            return ["runuser", "-u", user, "--"]
        except KeyError:
            continue
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", FALLBACK_USER],
                   check=True)
    return ["runuser", "-u", FALLBACK_USER, "--"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start(directory: Path | None = None, *, listen: tuple[str, ...] = (), allow: str | None = None) -> tuple[Path, str]:
    """Make and start a cluster in ``directory`` (a fresh temp dir by default); return it and its URL.

    ``listen``: addresses it listens on besides loopback (kept for ``pg_ctl restart``); ``allow``: a subnet
    (``10.1.2.0/24``) whose clients it trusts, as it trusts loopback (tests/fakes/netns.py's boxes)."""
    directory = Path(directory or tempfile.mkdtemp(prefix="swarm-pg-"))
    directory.mkdir(parents=True, exist_ok=True)
    runner = _runner()
    if runner:
        user = runner[2]
        shutil.chown(directory, user=user)
    os.chmod(directory, 0o700)
    data = directory / "data"
    pg = bin_dir()
    subprocess.run([*runner, str(pg / "initdb"), "-D", str(data), "-U", DB_USER, "-A", "trust", "-E", "UTF8",
                    "--no-sync"], check=True, stdout=subprocess.DEVNULL)
    if allow is not None:
        with open(data / "pg_hba.conf", "a", encoding="utf-8") as hba:
            hba.write(f"host all all {allow} trust\n")
    port = _free_port()
    (directory / "listen").write_text(",".join(("127.0.0.1", *listen)))
    options = _options(directory, port) + " -c fsync=on"
    subprocess.run([*runner, str(pg / "pg_ctl"), "-D", str(data), "-l", str(directory / "server.log"), "-o",
                    options, "-w", "-t", "60", "start"], check=True, stdout=subprocess.DEVNULL)
    (directory / "port").write_text(str(port))
    url = f"postgresql://{DB_USER}@127.0.0.1:{port}/postgres"
    _create_db(url)
    return directory, f"postgresql://{DB_USER}@127.0.0.1:{port}/{DB_NAME}"


def _create_db(url: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {DB_NAME}")


def pg_ctl(directory: Path, *args: str) -> None:
    """Run ``pg_ctl`` on the cluster in ``directory`` as its user (e.g. ``restart``)."""
    port = int((Path(directory) / "port").read_text().strip())
    options = _options(Path(directory), port)
    subprocess.run([*_runner(), str(bin_dir() / "pg_ctl"), "-D", str(Path(directory) / "data"), "-l",
                    str(Path(directory) / "server.log"), "-o", options, "-w", "-t", "60", "-m", "fast", *args],
                   check=True, stdout=subprocess.DEVNULL)


def _options(directory: Path, port: int) -> str:
    listen = directory / "listen"
    addresses = listen.read_text().strip() if listen.exists() else "127.0.0.1"
    return f"-c listen_addresses={addresses} -p {port} -k {directory} -c max_connections=200"


def stop(directory: Path) -> None:
    """Stop the cluster and remove its directory."""
    if (Path(directory) / "data" / "postmaster.pid").exists():
        pg_ctl(directory, "stop")
    shutil.rmtree(directory, ignore_errors=True)


def wait_ready(url: str, timeout: float = 30.0) -> None:
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        try:
            psycopg.connect(url, connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "start":
        _, url = start(Path(argv[1]))
        print(url)
        return 0
    if len(argv) == 2 and argv[0] == "stop":
        stop(Path(argv[1]))
        return 0
    print("usage: python -m tests.fakes.pg_cluster start|stop DIR", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


def fresh_schema(url: str, prefix: str = "t") -> str:
    """A URL to a new empty schema in ``url``'s database (its own swarm tables: one test's isolation)."""
    import uuid

    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    joiner = "&" if "?" in url else "?"
    return f"{url}{joiner}options=-csearch_path%3D{name}"


def own_ports(url: str) -> list[int]:
    """The local ports of this process's open TCP connections to ``url``'s server.

    The cluster is shared by every test of a run, the other xdist worker's included. So a test that counts or
    drops "its" sessions names them by these ports (``pg_stat_activity.client_port``), never by the database
    alone: that would count or drop the other worker's sessions too."""
    from urllib.parse import urlsplit

    import psutil

    port = urlsplit(url).port
    me = psutil.Process()
    listing = getattr(me, "net_connections", None) or me.connections  # psutil < 6 names it ``connections``
    return sorted(c.laddr.port for c in listing(kind="tcp")
                  if c.raddr and c.raddr.port == port and c.status == "ESTABLISHED")
