"""One primitive for every JSON file swarm writes: locked read-modify-write.

- An exclusive ``flock`` on ``<file>.lock`` (see ``swarm.core.flock``;
  compatible with ``filelock``) is held for the whole cycle, with a bounded
  wait that ends in ``LockTimeoutError``.
- Writes are atomic (``swarm.core.fileio.replace_file``): a uniquely named
  temp file created exclusively beside the target, every byte checked,
  fsynced, then ``os.replace``-d over the target, keeping the file's mode.
  Readers need no lock: they see the old content or the new, never a mix. A
  write the disk refuses (full, I/O error) leaves the old file and raises
  ``StorageError``, so nothing is reported done that is not on disk.
- Only a regular file is read: a directory or FIFO in its place, or any
  other ``OSError``, is a one-line ``StorageError``, never a hang.
- A file that does not parse is moved aside to ``<file>.corrupt-<ms>``, logged,
  and treated as empty. What counts as "does not parse" and how single invalid
  entries are dropped is the codec's business (see ``Codec``).

All locking lives here, so a Claude-Code-compatible lock could be added
without touching callers.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from swarm.core.fileio import read_regular, replace_file, storage_error
from swarm.core.flock import LockTimeout, acquire, release
from swarm.core.home import FILE_MODE, ensure_dir
from swarm.errors import LockTimeoutError

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

DEFAULT_LOCK_TIMEOUT = 10.0


class Codec(Protocol[T]):
    """Turns parsed JSON into a typed value and back.

    ``decode`` raises ``ValueError`` when the document as a whole is unusable
    (the file is then quarantined); it drops and logs invalid parts itself.
    """

    def empty(self) -> T: ...

    def decode(self, raw: Any, source: Path) -> T: ...

    def encode(self, value: T) -> Any: ...


class _Unparsable(Exception):
    """The bytes on disk are not a document this codec accepts."""


class LockedJsonFile(Generic[T]):
    """A JSON document on disk, read lock-free and changed under a file lock."""

    def __init__(
        self,
        path: Path,
        codec: Codec[T],
        *,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        fsync: bool = True,
        indent: int | None = None,
        durable_when: Callable[[Any], bool] | None = None,
    ) -> None:
        self.path = path
        self.codec = codec
        self.lock_timeout = lock_timeout
        self.fsync = fsync
        self.indent = indent
        self.durable_when = durable_when
        """Decides per write whether the new document must be fsynced (default: always).

        An inbox that a write leaves empty holds nothing a crash could lose, so
        its prunes skip the fsync; every write that keeps entries is durable.
        """
        self._lock_path = path.with_name(f"{path.name}.lock")
        self._dir_ready = False

    # -- reading ---------------------------------------------------------

    def _load_raw(self) -> tuple[Any, bool, int | None]:
        """Return (raw json, existed, file mode); raise ``_Unparsable`` on bad bytes."""
        try:
            found = read_regular(self.path)
        except OSError as exc:
            raise storage_error(exc, self.path, "read") from exc
        if found is None:
            return None, False, None
        data, mode = found
        try:
            return json.loads(data), True, mode
        except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            raise _Unparsable(f"{type(exc).__name__}: {str(exc)[:200]}") from exc

    def _decode(self, raw: Any, existed: bool) -> T:
        if not existed:
            return self.codec.empty()
        try:
            return self.codec.decode(raw, self.path)
        except (ValueError, RecursionError) as exc:
            raise _Unparsable(f"{type(exc).__name__}: {str(exc)[:200]}") from exc

    def read(self) -> T:
        """The current value, without taking the lock (quarantines bad files)."""
        try:
            raw, existed, _ = self._load_raw()
            return self._decode(raw, existed)
        except _Unparsable:
            with self._locked():
                value, _, _ = self._read_locked()
            return value

    def exists(self) -> bool:
        return self.path.exists()

    # -- changing --------------------------------------------------------

    def update(self, change: Callable[[T], R]) -> R:
        """Run ``change`` on the current value under the lock, then persist it.

        ``change`` mutates the value in place and returns whatever the caller
        wants back. The file is rewritten only if the encoded value differs.
        """
        return self.transform(lambda value: (value, change(value)))

    def transform(self, step: Callable[[T], tuple[T, R]]) -> R:
        """Like ``update``, but ``step`` returns ``(new value, result)``."""
        with self._locked():
            value, before, mode = self._read_locked()
            new_value, result = step(value)
            after = self.codec.encode(new_value)
            if after != before:
                self._write(after, mode)
            return result

    def remove_if(self, condition: Callable[[T], bool]) -> bool:
        """Under the lock, delete the file if it exists and ``condition`` holds for its value; True if deleted."""
        with self._locked():
            value, before, _ = self._read_locked()
            if before is None or not condition(value):
                return False
            try:
                self.path.unlink()
            except OSError as exc:
                raise storage_error(exc, self.path, "remove") from exc
            return True

    def _read_locked(self) -> tuple[T, Any, int | None]:
        """Value, its encoding as found on disk, and the file's mode; quarantine if unparsable."""
        try:
            raw, existed, mode = self._load_raw()
            value = self._decode(raw, existed)
        except _Unparsable as exc:
            self._quarantine(str(exc))
            return self.codec.empty(), None, None
        return value, (raw if existed else None), mode

    def _quarantine(self, reason: str) -> Path:
        stamp = int(time.time() * 1000)
        target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        suffix = 0
        while target.exists():  # never overwrite earlier evidence (we hold the lock)
            suffix += 1
            target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{suffix}")
        try:
            os.replace(self.path, target)
        except OSError as exc:
            raise storage_error(exc, self.path, "move aside the unparsable file") from exc
        log.error("quarantined corrupt file", extra={"path": str(self.path), "moved_to": str(target), "reason": reason})
        return target

    def _write(self, doc: Any, mode: int | None) -> None:
        """Replace the file with ``doc``, keeping ``mode`` (the old file's) when it is not the default."""
        durable = self.fsync and (self.durable_when is None or self.durable_when(doc))
        try:
            replace_file(self.path, encode_json(doc, self.indent), fsync=durable,
                         mode=None if mode in (None, FILE_MODE) else mode)
        except OSError as exc:
            raise storage_error(exc, self.path, "write") from exc

    @contextmanager
    def _locked(self) -> Iterator[None]:
        if not self._dir_ready:
            try:
                ensure_dir(self.path.parent)
            except OSError as exc:
                raise storage_error(exc, self.path.parent, "create the directory") from exc
            self._dir_ready = True
        try:
            fd = acquire(self._lock_path, self.lock_timeout)
        except LockTimeout as exc:
            raise LockTimeoutError(
                f"could not lock {self.path} within {self.lock_timeout:g}s; "
                f"another process holds {self._lock_path.name} — retry, or stop the stuck process"
            ) from exc
        except OSError as exc:  # e.g. a Claude Code lock directory where our lock file belongs
            raise LockTimeoutError(f"cannot use the lock file {self._lock_path}: {exc.strerror}; "
                                   f"if another tool left it there, stop that tool and remove it") from exc
        try:
            yield
        finally:
            release(fd)


def encode_json(doc: Any, indent: int | None = None) -> bytes:
    """UTF-8 JSON; text that UTF-8 cannot carry (lone surrogates) is written escaped."""
    try:
        return json.dumps(doc, ensure_ascii=False, indent=indent).encode()
    except UnicodeEncodeError:
        return json.dumps(doc, ensure_ascii=True, indent=indent).encode()
