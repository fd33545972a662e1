"""Acknowledged means kept: a full disk, a short write, a planted symlink.

- ``swarm send`` on a full disk: every send that said "sent" is in the inbox,
  the inbox still parses, a refused send says so in one line (exit 1) and
  leaves no temp file. Run on a real 1 MiB tmpfs when this runs as root
  (mount works), else in processes whose file size limit (``RLIMIT_FSIZE``,
  SIGXFSZ ignored) makes writes fail the same way.
- A JSON Lines append the disk cuts short raises, and the torn line it leaves
  does not swallow the next record.
- A symlink planted where the old fixed temp name was (``<inbox>.tmp``) is
  never written through; an inbox keeps its mode.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from swarm.core.home import Home
from swarm.core.jsonl import append_record, read_records
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.core.spool import spool_dir
from swarm.core.teams import TeamStore
from swarm.errors import StorageError
from tests.cli.conftest import SWARM_EXE
from tests.forked import run_swarm

DISK_BYTES = 1 << 20
MESSAGE = "m" * 60_000
"""Each send rewrites the whole inbox, so ~8 of these fill a 1 MiB disk (old file + temp)."""
SENDS = 14


@dataclass
class SmallDisk:
    """A directory where writes start failing after about ``DISK_BYTES``."""

    root: Path
    preexec: Callable[[], None] | None
    """Run in each child before exec when the limit is per process (no tmpfs)."""


def _limit_file_size() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write then fails with EFBIG instead of killing
    resource.setrlimit(resource.RLIMIT_FSIZE, (DISK_BYTES // 2, resource.RLIM_INFINITY))


@pytest.fixture(params=["tmpfs", "rlimit"])
def small_disk(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SmallDisk]:
    """A real 1 MiB tmpfs (needs root and mount), or processes with a file size limit (always possible)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if request.param == "rlimit":
        yield SmallDisk(mount, _limit_file_size)
        return
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root; the rlimit variant covers a full disk")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_BYTES}", "tmpfs", str(mount)],
                             check=False, capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip()}); the rlimit variant covers a full disk")
    try:
        yield SmallDisk(mount, None)
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def _send(disk: SmallDisk, text: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SWARM_HOME": str(disk.root)}
    return subprocess.run([str(SWARM_EXE), "send", "bob", text, "--team", "t"], check=False, capture_output=True,
                          text=True, timeout=60, env=env, preexec_fn=disk.preexec)


def test_send_on_a_full_disk_reports_only_what_it_kept(small_disk: SmallDisk) -> None:
    home = Home(small_disk.root)
    TeamStore(home).create("t")
    TeamStore(home).add_member("t", _member("bob", home))
    results = [(f"{n}:{MESSAGE}", _send(small_disk, f"{n}:{MESSAGE}")) for n in range(SENDS)]

    refused = [result for _, result in results if result.returncode != 0]
    assert refused, "the disk never filled: the test proves nothing"
    for result in refused:
        assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("swarm: error: cannot write"), result.stderr
    inbox = home.inbox_path("t", "bob")
    kept = [entry["text"] for entry in json.loads(inbox.read_bytes())]  # parses: never replaced by a torn file
    acknowledged = [text for text, result in results if result.returncode == 0]
    assert kept == acknowledged, f"{len(acknowledged)} sends said sent, {len(kept)} are in the inbox"
    assert not list(inbox.parent.glob("bob.json.corrupt-*"))
    assert not list(inbox.parent.glob("bob.json.tmp*")), "a failed write left its temp file"
    spool = spool_dir(inbox)
    assert not spool.exists() or not list(spool.iterdir()), "a refused send left its entry for a later writer"


def _member(name: str, home: Home) -> Member:
    return Member(agent_id=f"{name}@t", name=name, joined_at=1, cwd=str(home.root), subscriptions=[])


@contextmanager
def _file_size_limit(limit: int) -> Iterator[None]:
    """Writes in this process past ``limit`` bytes are cut short, then fail with EFBIG."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)


def test_short_append_raises_and_the_torn_line_does_not_swallow_the_next(tmp_path: Path) -> None:
    record = tmp_path / "transcript.jsonl"
    append_record(record, {"n": 1}, durable=True)
    size = record.stat().st_size
    with _file_size_limit(size + 100), pytest.raises(StorageError, match="cannot append"):
        append_record(record, {"n": 2, "text": "x" * 1000}, durable=True)
    assert record.stat().st_size == size + 100, "the disk took part of the line"
    append_record(record, {"n": 3}, durable=True)
    assert [r["n"] for r in read_records(record)] == [1, 3]


def test_append_after_a_crash_left_a_torn_line(tmp_path: Path) -> None:
    record = tmp_path / "permissions.jsonl"
    record.write_bytes(b'{"n": 1}\n{"n": 2, "text": "cut off by a cr')
    append_record(record, {"n": 3}, durable=False)
    assert [r["n"] for r in read_records(record)] == [1, 3]


def test_send_never_writes_through_a_planted_symlink(home: Home, tmp_path: Path) -> None:
    TeamStore(home).create("t")
    TeamStore(home).add_member("t", _member("bob", home))
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    inbox = home.inbox_path("t", "bob")
    (inbox.parent / "bob.json.tmp").symlink_to(outside)  # the temp name every send used to write through
    env = {**os.environ, "SWARM_HOME": str(home.root)}
    for number in range(3):
        result = run_swarm(["send", "bob", f"hello {number}", "--team", "t"], timeout=60, env=env)
        assert result.returncode == 0, result.stderr
    assert outside.read_text() == "precious\n"
    assert not inbox.is_symlink()
    assert [e.text for e in Mailbox(home, "t").read("bob")] == ["hello 0", "hello 1", "hello 2"]


def test_inbox_keeps_its_mode(home: Home) -> None:
    TeamStore(home).create("t")
    mailbox = Mailbox(home, "t")
    mailbox.send("team-lead", "first", sender="team-lead")
    inbox = home.inbox_path("t", "team-lead")
    inbox.chmod(0o640)  # e.g. set by Claude Code or by the user
    mailbox.send("team-lead", str(uuid.uuid4()), sender="team-lead")
    assert inbox.stat().st_mode & 0o777 == 0o640
