"""The CLI server's watch on its own code (``swarm.cli.code_watch``): what counts as a change, and its cost.

A probe module named ``swarm._probe_*`` whose file lives in a temporary
directory stands for a loaded swarm module, so the tests change "installed
code" without touching the checkout.
"""

from __future__ import annotations

import os
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from swarm.cli.code_watch import CodeWatch, code_state

CHANGES: dict[str, Callable[[Path], None]] = {
    "written in place": lambda d: (d / "probe.py").open("a").write("x = 1\n"),
    "touched": lambda d: os.utime(d / "probe.py", ns=(1, 1)),
    "replaced by a rename": lambda d: ((d / "new.py").write_text("y = 2\n"), os.replace(d / "new.py", d / "probe.py")),
    "renamed away": lambda d: os.replace(d / "probe.py", d / "gone.py"),
    "removed": lambda d: (d / "probe.py").unlink(),
    "a new module beside it": lambda d: (d / "other.py").write_text(""),
}


@pytest.fixture
def probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "probe.py").write_text("")
    module = types.ModuleType("swarm._probe_code_watch")
    module.__file__ = str(folder / "probe.py")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    yield folder


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_any_change_to_a_loaded_module_counts_and_stays_counted(probe: Path, change: str) -> None:
    watch = CodeWatch(code_state())
    try:
        assert not watch.changed()
        CHANGES[change](probe)
        assert watch.changed(), f"{change}: not seen"
        assert watch.changed()  # once stale, always stale: the server exits on it
    finally:
        watch.close()


def test_a_change_while_the_server_imported_is_seen_at_the_first_request(probe: Path) -> None:
    before = code_state()  # then the imports run; meanwhile an upgrade rewrites a module
    os.utime(probe / "probe.py", ns=(10**18, 10**18))
    watch = CodeWatch(before)
    try:
        assert watch.changed()
    finally:
        watch.close()


def test_a_request_stats_nothing(probe: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The point of the watch: ~190 stats (~1.5 ms) were on every served command's way to its fork."""
    watch = CodeWatch(code_state())
    try:
        calls: list[str] = []
        real = os.stat
        monkeypatch.setattr(os, "stat", lambda path, *a, **k: calls.append(str(path)) or real(path, *a, **k))
        assert not any(watch.changed() for _ in range(100))
        assert calls == []
    finally:
        watch.close()


def test_without_inotify_every_request_compares_the_files(probe: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "inotify_simple", None)  # the import fails: no inotify here
    watch = CodeWatch(code_state())
    try:
        assert not watch.changed()
        (probe / "probe.py").write_text("z = 3\n")
        os.utime(probe / "probe.py", ns=(10**18, 10**18))
        assert watch.changed()
    finally:
        watch.close()
