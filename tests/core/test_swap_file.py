"""``fileio.swap_file``: a replace for records a power loss may lose (a teammate's activity), at the least cost.

Readers must still see the old record or the new, never a gap or a part; a
symlink or directory where the file belongs, or a full disk, must not change
what is there. The writer runs in its own process, as a teammate does.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from swarm.core.fileio import RENAME_EXCHANGE, renameat2, swap_file

WRITER = r"""
import sys
from pathlib import Path
from swarm.core.fileio import swap_file
path, count = Path(sys.argv[1]), int(sys.argv[2])
for n in range(count):
    swap_file(path, b'{"n": %d, "pad": "%s"}' % (n, b"x" * (n % 300)))
"""


def _leftovers(directory: Path, name: str) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name != name)


def test_readers_never_see_a_gap_or_a_part_while_a_writer_swaps(tmp_path: Path) -> None:
    path = tmp_path / "mate.json"
    swap_file(path, b'{"n": -1, "pad": ""}')
    count = 3000
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(count)])
    seen, reads = set(), 0
    try:
        while writer.poll() is None or reads == 0:
            with open(path, "rb") as f:  # FileNotFoundError here would be a gap
                record = json.loads(f.read())  # a torn record would not parse, or not match its pad
            assert record["pad"] == "x" * (record["n"] % 300) if record["n"] >= 0 else record["pad"] == ""
            seen.add(record["n"])
            reads += 1
    finally:
        writer.wait(60)
    assert writer.returncode == 0
    assert json.loads(path.read_bytes())["n"] == count - 1
    assert len(seen) > 1  # the reads did overlap the writes
    assert _leftovers(tmp_path, "mate.json") == []  # every old record was unlinked, no temp file stays
    assert path.stat().st_mode & 0o777 == 0o600


def test_the_first_record_is_created(tmp_path: Path) -> None:
    path = tmp_path / "first.json"
    swap_file(path, b"{}")
    assert path.read_bytes() == b"{}"
    assert _leftovers(tmp_path, "first.json") == []


def test_a_symlink_where_the_record_belongs_is_replaced_never_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    path = tmp_path / "mate.json"
    path.symlink_to(victim)
    swap_file(path, b'{"status": "busy"}')
    assert not path.is_symlink() and path.read_bytes() == b'{"status": "busy"}'
    assert victim.read_text() == "keep me"
    assert _leftovers(tmp_path, "mate.json") == ["victim.txt"]


def test_a_directory_where_the_record_belongs_is_an_error_and_stays(tmp_path: Path) -> None:
    path = tmp_path / "mate.json"
    path.mkdir()
    (path / "inside").write_text("mine")
    with pytest.raises(IsADirectoryError):
        swap_file(path, b"{}")
    assert (path / "inside").read_text() == "mine"
    assert _leftovers(tmp_path, "mate.json") == []


def _limit_file_size() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))


def test_a_full_disk_keeps_the_old_record_and_leaves_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "mate.json"
    swap_file(path, b'{"status": "idle"}')
    big = "swap_file(Path(sys.argv[1]), b'{\"pad\": \"' + b'x' * 4096 + b'\"}')"
    code = f"import signal, sys\nfrom pathlib import Path\nfrom swarm.core.fileio import swap_file\n" \
           f"signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n{big}"
    result = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                            preexec_fn=_limit_file_size, timeout=60)
    assert result.returncode != 0 and "File too large" in result.stderr
    assert path.read_bytes() == b'{"status": "idle"}'
    assert _leftovers(tmp_path, "mate.json") == []


@pytest.mark.skipif(sys.platform != "linux", reason="renameat2 is Linux's")
def test_the_renameat2_binding_exchanges_two_files(tmp_path: Path) -> None:
    rename = renameat2()
    assert rename is not None
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("A")
    b.write_text("B")
    rename(a, b, RENAME_EXCHANGE)
    assert (a.read_text(), b.read_text()) == ("B", "A")
    with pytest.raises(FileNotFoundError):
        rename(tmp_path / "missing", b, RENAME_EXCHANGE)
