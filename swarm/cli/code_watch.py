"""Whether the code a CLI server runs is still what is installed.

The server (``swarm.cli.forkserver``) must never serve an upgrade with old
code. It used to stat every loaded swarm module file and every import
directory on each request (~190 paths: ~1.5 ms of every served command, on
its way to the fork). Now it asks inotify once, at start, to watch the
directories those files are in and the import directories, and a request
only reads whatever events came since (none: a read that returns at once).
Any entry written, created, removed, renamed in or out, or touched there
counts as a change, as does the watch's queue overflowing; where inotify is
not available, every request compares the paths' stat as before.

A change while the server was importing (an upgrade racing its start) is
caught too: the watches are set up first, then the paths are compared with
what they were before the imports.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from swarm.core.watch import ChangeWatcher, InotifyWatcher, watch_dirs

State = tuple[tuple[str, int, int], ...]


def code_state() -> State:
    """(path, mtime_ns, size) of every loaded swarm module file and every import directory: what an upgrade changes."""
    paths = {m.__file__ for name, m in list(sys.modules.items())
             if (name == "swarm" or name.startswith("swarm.")) and getattr(m, "__file__", None)}
    paths.update(p for p in sys.path if p and os.path.isdir(p))
    state = []
    for path in sorted(p for p in paths if p):
        try:
            st = os.stat(path)
        except OSError:
            state.append((path, -1, -1))
        else:
            state.append((path, st.st_mtime_ns, st.st_size))
    return tuple(state)


class CodeWatch:
    """The loaded code as found before the imports (``before``), and a watch on it from now on."""

    def __init__(self, before: State) -> None:
        recorded = {path: (mtime, size) for path, mtime, size in before}
        self._watcher: ChangeWatcher | None = None
        now = code_state()
        dirs = sorted({path if os.path.isdir(path) else os.path.dirname(path) for path, _, _ in now})
        if dirs:
            watcher = watch_dirs(Path(dirs[0]), *map(Path, dirs[1:]), any_change=True)
            if isinstance(watcher, InotifyWatcher):
                self._watcher = watcher
            else:
                watcher.close()
        # as found before the imports: a change while they ran makes the first request stale
        self._state = tuple((path, *recorded.get(path, (mtime, size))) for path, mtime, size in now)
        self._changed = code_state() != self._state if self._watcher is not None else False

    def changed(self) -> bool:
        """Whether any of it changed since (once True, always True)."""
        if not self._changed:
            self._changed = self._watcher.wait(0) if self._watcher is not None else code_state() != self._state
        return self._changed

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.close()
