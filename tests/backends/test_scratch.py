"""A teammate's temp directories carry its process token, and only those are removed once it is stopped.

Real directories under a private TMPDIR; what a hostile model with a Bash tool could lay in /tmp for the sweep
to follow (a symlink named like a scratch directory, a token that is a glob) is tried too.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarm.backends.procs import PROC_TOKEN_VAR, process_create_time, remove_scratch, scratch_dir


@pytest.fixture
def tmp_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    base = tmp_path / "tmp"
    base.mkdir()
    monkeypatch.setenv("TMPDIR", str(base))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    yield base
    tempfile.tempdir = None


def test_a_teammates_scratch_is_named_after_its_token_and_removed_by_it(
        tmp_base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mine, other = uuid.uuid4().hex, uuid.uuid4().hex
    monkeypatch.setenv(PROC_TOKEN_VAR, mine)
    logs, sandbox = scratch_dir("bash"), scratch_dir("sandbox")
    (logs / "bg-1.log").write_text("output")
    monkeypatch.setenv(PROC_TOKEN_VAR, other)
    theirs = scratch_dir("bash")
    assert logs.parent == tmp_base and logs.name.startswith(f"swarm-bash-{mine}-")
    assert sorted(remove_scratch(mine)) == sorted([logs, sandbox])
    assert not logs.exists() and not sandbox.exists() and theirs.is_dir()  # another teammate's stays
    assert remove_scratch(mine) == []  # twice is harmless


def test_without_a_token_nothing_is_named_after_one_or_removed(tmp_base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PROC_TOKEN_VAR, raising=False)
    plain = scratch_dir("bash")  # a main session's: it removes its own
    assert plain.name.startswith("swarm-bash-") and plain.is_dir()
    monkeypatch.setenv(PROC_TOKEN_VAR, "*")  # not a token spawn makes: not put in a name to be globbed for later
    assert scratch_dir("bash").name.startswith("swarm-bash-") and "*" not in str(scratch_dir("bash"))
    for token in (None, "", "*", "?" * 32, "../" + "a" * 29, "A" * 32):
        assert remove_scratch(token) == []
    assert plain.is_dir()


def test_the_sweep_follows_no_symlink_a_model_laid_in_tmp(tmp_base: Path, tmp_path: Path) -> None:
    """A model's Bash can create ``/tmp/swarm-bash-<token>-x`` as a link to the person's files: the sweep removes
    the link's own name at most, never what it points to."""
    token = uuid.uuid4().hex
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("keep")
    (tmp_base / f"swarm-bash-{token}-evil").symlink_to(precious, target_is_directory=True)
    (tmp_base / f"swarm-bash-{token}-file").write_text("not a directory")
    assert remove_scratch(token) == []
    assert (precious / "keep.txt").read_text() == "keep"


def test_a_leads_scratch_names_its_process_and_the_next_one_removes_a_dead_makers(
        tmp_base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A lead (no token) killed with ``kill -9`` cannot remove its own directory: the next one made on this machine
    does, as the name says its maker is gone. A live maker's stays; a reused pid is not its maker; a symlink
    named like a dead maker's is not followed."""
    monkeypatch.delenv(PROC_TOKEN_VAR, raising=False)
    gone = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    gone_start = process_create_time(gone.pid)
    gone.kill()
    gone.wait()
    assert gone_start is not None
    dead = tmp_base / f"swarm-bash-p{gone.pid}.{round(gone_start * 1000)}-abc"
    dead.mkdir()
    (dead / "bg-1.log").write_text("left by a killed lead")
    own_start = process_create_time(os.getpid())
    assert own_start is not None
    reused = tmp_base / f"swarm-bash-p{os.getpid()}.{round(own_start * 1000) - 60_000}-abc"
    reused.mkdir()
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("keep")
    link = tmp_base / f"swarm-sandbox-p{gone.pid}.{round(gone_start * 1000)}-evil"
    link.symlink_to(precious, target_is_directory=True)
    odd = tmp_base / "swarm-bash-pX.1-abc"
    odd.mkdir()

    mine = scratch_dir("bash")
    assert mine.name.startswith(f"swarm-bash-p{os.getpid()}.{round(own_start * 1000)}-")
    assert not dead.exists() and not reused.exists()
    assert link.is_symlink() and (precious / "keep.txt").read_text() == "keep"
    assert odd.is_dir()
    scratch_dir("sandbox")
    assert mine.is_dir()  # its maker (this process) still runs
