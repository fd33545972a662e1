"""``fileio.InPlaceRecord`` and the activity record written with it: one ``pwrite`` a write, never a wrong read.

A teammate rewrites its activity record twice a turn. Readers (``swarm
status``, the lead) take no lock: they must get the old record or the new,
never a mix, and a half-done write must be told by its ``seq`` and read
again. A symlink or directory where the file belongs, a file replaced under
the writer, or a full disk must not change anything but the record itself.
The writers run in their own processes, as teammates do.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from swarm.core.document_codecs import ActivityCodec
from swarm.core.fileio import RENAME_NOREPLACE, InPlaceRecord, renameat2
from swarm.core.home import Home
from swarm.core.jsonfile import LockedJsonFile, encode_json
from swarm.core.protocol import Activity

WRITER = r"""
import sys
from pathlib import Path
from swarm.core.home import Home
from swarm.core.protocol import Activity
from swarm.core.teams import TeamStore
home, count = Home(Path(sys.argv[1])), int(sys.argv[2])
store = TeamStore(home)
for n in range(count):  # the two states, and token counts of changing length: every write differs from the last
    store.set_activity("t", "w", Activity(status="busy" if n % 2 else "idle", last_activity=n, tokens=n * 10 ** (n % 7)))
"""


def _leftovers(directory: Path, name: str) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name != name)


def test_each_write_after_the_first_rewrites_the_same_file_in_place(tmp_path: Path) -> None:
    path = tmp_path / "mate.json"
    record = InPlaceRecord(path, room=64)
    record.write(b'{"n": 1}')
    first = os.stat(path)
    record.write(b'{"n": 22}')
    record.write(b'{"n": 3}')
    now = os.stat(path)
    assert (now.st_ino, now.st_size) == (first.st_ino, 64)  # no new file: what a swap or replace would make
    assert json.loads(path.read_bytes()) == {"n": 3}  # the longer record before it is covered by blanks
    assert _leftovers(tmp_path, "mate.json") == []
    assert now.st_mode & 0o777 == 0o600


def test_readers_get_the_old_record_or_the_new_while_a_teammate_rewrites_it(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    path = home.activity_path("t", "w")
    count = 4000
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(home.root), str(count)])
    codec = ActivityCodec()
    seen, reads, torn = set(), 0, 0
    try:
        while writer.poll() is None or reads == 0:
            try:
                raw = json.loads(path.read_bytes())
            except (FileNotFoundError, ValueError):  # not made yet, or a read that caught a write midway
                torn += path.exists()
                continue
            try:
                found = codec.decode(raw, path)
            except ValueError:  # told by its seq: the reader reads again
                torn += 1
                continue
            assert found is not None
            n = found.last_activity
            assert (found.status, found.tokens) == ("busy" if n % 2 else "idle", n * 10 ** (n % 7))  # never a mix
            seen.add(n)
            reads += 1
    finally:
        writer.wait(60)
    assert writer.returncode == 0
    last = LockedJsonFile(path, codec).read()
    assert last is not None and last.last_activity == count - 1
    assert len(seen) > 1  # the reads did overlap the writes
    assert _leftovers(path.parent, "w.json") == []


def test_a_record_read_halfway_through_a_rewrite_is_told_by_its_seq(tmp_path: Path) -> None:
    codec = ActivityCodec()
    old = encode_json(codec.slot(Activity(status="busy", last_activity=100, tokens=5000), 11))
    new = encode_json(codec.slot(Activity(status="idle", last_activity=200, tokens=7000), 12))
    assert len(old) == len(new)
    for cut in range(1, len(old)):  # the start of the new write and the end of the old one, cut anywhere
        mixed = new[:cut] + old[cut:]
        try:
            raw = json.loads(mixed)
        except ValueError:
            continue
        if mixed in (old, new):
            continue
        found = None
        with pytest.raises(ValueError, match="rewritten"):
            found = codec.decode(raw, tmp_path / "w.json")
        assert found is None
    assert codec.decode(json.loads(new), tmp_path / "w.json") == Activity(status="idle", last_activity=200, tokens=7000)


def test_a_record_with_no_seq_is_read_as_before(tmp_path: Path) -> None:
    """One written whole by an earlier swarm (a file swapped in), with no ``seq``: nothing to tell."""
    found = ActivityCodec().decode({"status": "busy", "lastActivity": 3, "tokens": 1}, tmp_path / "w.json")
    assert found == Activity(status="busy", last_activity=3, tokens=1)


def test_a_symlink_where_the_record_belongs_is_replaced_never_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    path = tmp_path / "mate.json"
    path.symlink_to(victim)
    record = InPlaceRecord(path)
    record.write(b'{"status": "busy"}')
    assert not path.is_symlink() and path.read_bytes() == b'{"status": "busy"}'
    assert victim.read_text() == "keep me"
    path.unlink()
    path.symlink_to(victim)  # planted after the first write: the next one sees another file there
    record.write(b'{"status": "idle"}')
    assert not path.is_symlink() and json.loads(path.read_bytes()) == {"status": "idle"}
    assert victim.read_text() == "keep me"
    assert _leftovers(tmp_path, "mate.json") == ["victim.txt"]


def test_a_file_linked_in_where_the_record_belongs_is_never_written_into(tmp_path: Path) -> None:
    """A hostile tool puts a hard link to another file at the record's path: the writer writes only the file it
    made itself (its descriptor), so the other file is left alone and the path gets a file of its own again."""
    path = tmp_path / "mate.json"
    record = InPlaceRecord(path, room=64)
    record.write(b'{"n": 1}')
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me, the same length and more, more, more, more, more, more!")
    os.link(victim, tmp_path / "planted")
    os.replace(tmp_path / "planted", path)
    record.write(b'{"n": 2}')
    assert victim.read_text() == "keep me, the same length and more, more, more, more, more, more!"
    assert json.loads(path.read_bytes()) == {"n": 2} and os.stat(path).st_ino != os.stat(victim).st_ino


def test_a_directory_where_the_record_belongs_is_an_error_and_stays(tmp_path: Path) -> None:
    path = tmp_path / "mate.json"
    path.mkdir()
    (path / "inside").write_text("mine")
    with pytest.raises(IsADirectoryError):
        InPlaceRecord(path).write(b"{}")
    assert (path / "inside").read_text() == "mine"
    assert _leftovers(tmp_path, "mate.json") == []


def test_a_record_replaced_or_removed_under_its_writer_is_made_again(tmp_path: Path) -> None:
    path = tmp_path / "mate.json"
    record = InPlaceRecord(path, room=32)
    record.write(b'{"n": 1}')
    path.write_bytes(b'{"someone": "else"}')  # another program's file now: never written over in place
    replaced = os.stat(path).st_ino
    record.write(b'{"n": 2}')
    assert json.loads(path.read_bytes()) == {"n": 2} and os.stat(path).st_ino != replaced
    path.unlink()
    record.write(b'{"n": 3}')
    assert json.loads(path.read_bytes()) == {"n": 3}


def test_a_record_longer_than_its_file_is_written_whole(tmp_path: Path) -> None:
    path = tmp_path / "mate.json"
    record = InPlaceRecord(path, room=16)
    record.write(b'{"n": 1}')
    before = os.stat(path).st_ino
    long = b'{"pad": "' + b"x" * 100 + b'"}'
    record.write(long)
    assert path.read_bytes() == long and os.stat(path).st_ino != before  # a new file, not grown in place
    record.write(b'{"n": 2}')
    assert json.loads(path.read_bytes()) == {"n": 2}


def _limit_file_size() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))


FULL = r"""
import signal, sys
from pathlib import Path
from swarm.core.fileio import InPlaceRecord
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
record = InPlaceRecord(Path(sys.argv[1]))
record.write(b'{"status": "busy"}')  # the file exists: made again whole, within the limit
record.write(b'{"status": "idle"}')  # in place: no growth, so the limit does not touch it
print("in place ok", flush=True)
record.write(b'{"pad": "' + b"x" * 4096 + b'"}')  # longer than the file: refused, the record stays
"""


def test_a_full_disk_keeps_the_last_record_and_leaves_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "mate.json"
    path.write_bytes(b'{"status": "starting"}')
    result = subprocess.run([sys.executable, "-c", FULL, str(path)], capture_output=True, text=True,
                            preexec_fn=_limit_file_size, timeout=60)
    assert result.returncode != 0 and "File too large" in result.stderr
    assert "in place ok" in result.stdout
    assert json.loads(path.read_bytes()) == {"status": "idle"}
    assert _leftovers(tmp_path, "mate.json") == []


@pytest.mark.skipif(sys.platform != "linux", reason="renameat2 is Linux's")
def test_the_renameat2_binding_moves_without_replacing(tmp_path: Path) -> None:
    rename = renameat2()
    assert rename is not None
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("A")
    b.write_text("B")
    with pytest.raises(FileExistsError):
        rename(a, b, RENAME_NOREPLACE)
    assert (a.read_text(), b.read_text()) == ("A", "B")
    rename(a, tmp_path / "c", RENAME_NOREPLACE)
    assert (tmp_path / "c").read_text() == "A" and not a.exists()
    with pytest.raises(FileNotFoundError):
        rename(tmp_path / "missing", b, RENAME_NOREPLACE)
