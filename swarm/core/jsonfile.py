"""One primitive for every JSON file swarm writes: locked read-modify-write.

- The lock of ``<file>`` (``swarm.core.flock``: Claude Code's lock directory
  ``<file>.lock/``, guarded by a swarm flock) is held for the whole cycle,
  with a bounded wait that ends in ``LockTimeoutError``.
- Writes are atomic (``swarm.core.fileio.replace_file``): a uniquely named
  temp file created exclusively beside the target, every byte checked,
  fsynced, then ``os.replace``-d over the target, keeping the file's mode and
  its indentation (2-space pretty JSON, as Claude Code writes, stays so;
  compact stays compact). Readers need no lock: they see the old content or
  the new, never a mix. A write the disk refuses (full, I/O error) leaves the
  old file and raises ``StorageError``, so nothing is reported done that is
  not on disk.
- Only a regular file is read: a directory or FIFO in its place, or any
  other ``OSError``, is a one-line ``StorageError``, never a hang.
- Another program may rewrite a file in place (Claude Code does so with
  ``config.json``), so a file that does not parse is re-read with short
  backoff for up to ``REREAD_WINDOW`` seconds before it counts as corrupt.
- A lock-free ``read`` never moves a file aside: one that stays unparsable
  is logged and read as empty. Only a writer, holding the lock and after
  the re-read window, moves it to ``<file>.corrupt-<ms>``, logs it, and
  starts from empty. What counts as "does not parse" and how single invalid
  entries are dropped is the codec's business (see ``Codec``).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import random
import time
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import orjson

from swarm.core.fileio import read_regular, replace_file, storage_error
from swarm.core.flock import OUTLAST_STALE, LockTimeout, acquire, release, who_holds
from swarm.core.home import FILE_MODE, ensure_dir
from swarm.errors import LockBusyError, LockTimeoutError, StorageError

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

DEFAULT_LOCK_TIMEOUT = OUTLAST_STALE
"""Seconds a writer waits for a lock by default: long enough to outlast a dead Claude Code holder's lock."""
REREAD_WINDOW = 0.5
"""Seconds an unparsable file is re-read before it counts as corrupt (a writer may be mid-rewrite)."""
FIRST_REREAD = 0.001
"""Seconds before the first re-read; doubled up to ``MAX_REREAD``."""
MAX_REREAD = 0.02


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


@dataclass(frozen=True)
class _OnDisk:
    """What a read found: the parsed JSON (None if no file), the file's mode and indentation."""

    raw: Any = None
    existed: bool = False
    mode: int | None = None
    indent: int | None = None


class LockedJsonFile(Generic[T]):
    """A JSON document on disk, read lock-free and changed under the file's lock."""

    def __init__(
        self,
        path: Path,
        codec: Codec[T],
        *,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        fsync: bool = True,
        indent: int | None = None,
        durable_when: Callable[[Any], bool] | None = None,
        shared: bool = False,
        quarantine: bool = True,
    ) -> None:
        self.path = path
        self.codec = codec
        self.lock_timeout = lock_timeout
        self.fsync = fsync
        self.indent = indent
        """Indentation of a file this creates (None: compact); an existing file keeps its own."""
        self.durable_when = durable_when
        """Decides per write whether the new document must be fsynced (default: always).

        An inbox that a write leaves empty holds nothing a crash could lose, so
        its prunes skip the fsync; every write that keeps entries is durable.
        """
        self.shared = shared
        """Claude Code writes this file too: swarm takes turns on its lock from the start (``core.lock_turns``)."""
        self.may_quarantine = quarantine
        """False for another program's file (Claude Code's ``.claude.json``): a writer that finds it
        unparsable raises ``StorageError`` and leaves it where it is, instead of moving it aside."""
        self._dir_ready = False
        self._lock: Path | None = None
        """The lock's path, built at the first change (a ``Path`` is built by parsing: not once per write)."""

    # -- reading ---------------------------------------------------------

    def _load_raw(self) -> _OnDisk:
        """What is on disk now; raise ``_Unparsable`` on bad bytes."""
        try:
            found = read_regular(self.path)
        except OSError as exc:
            raise storage_error(exc, self.path, "read") from exc
        if found is None:
            return _OnDisk()
        data, mode = found
        try:
            raw = decode_json(data)
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError and nesting too deep (decode_json)
            raise _Unparsable(f"{type(exc).__name__}: {str(exc)[:200]}") from exc
        return _OnDisk(raw=raw, existed=True, mode=mode, indent=detect_indent(data, self.indent))

    def _load(self) -> tuple[T, _OnDisk]:
        """The decoded value and what was on disk; ``_Unparsable`` if the codec refuses it."""
        found = self._load_raw()
        if not found.existed:
            return self.codec.empty(), found
        try:
            return self.codec.decode(found.raw, self.path), found
        except (ValueError, RecursionError) as exc:
            raise _Unparsable(f"{type(exc).__name__}: {str(exc)[:200]}") from exc

    def _load_patiently(self) -> tuple[T, _OnDisk]:
        """``_load``, re-read with backoff for up to ``REREAD_WINDOW`` s while the file does not parse."""
        deadline = time.monotonic() + REREAD_WINDOW
        delay = FIRST_REREAD
        while True:
            try:
                return self._load()
            except _Unparsable:
                if time.monotonic() >= deadline:
                    raise
            time.sleep(delay * random.uniform(0.5, 1.5))  # jittered: never in step with a rewriter's rhythm
            delay = min(delay * 2, MAX_REREAD)

    def read(self, *, quarantine: bool = False, quiet: bool = False) -> T:
        """The current value, without taking the lock.

        A file that stays unparsable through the re-read window is left in
        place, logged (unless ``quiet``: the caller reports it in its own
        words), and read as empty; with ``quarantine`` (for callers about to
        change things) it is moved aside under the lock instead.
        """
        try:
            value, _ = self._load_patiently()
            return value
        except _Unparsable as exc:
            if not quarantine:
                if not quiet:
                    log.warning("read an unparsable file as empty and left it in place",
                                extra={"path": str(self.path), "reason": str(exc)})
                return self.codec.empty()
        with self._locked():
            value, _ = self._read_locked()
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

    def transform(self, step: Callable[[T], tuple[T, R]], *, wait: float | None = None,
                  then: Callable[[R], None] | None = None, undo: Callable[[], None] | None = None) -> R:
        """Like ``update``, but ``step`` returns ``(new value, result)``.

        ``wait`` overrides the lock timeout for this call (0: one try, then
        ``LockTimeoutError``). Both hooks run while the lock is still held:
        ``then`` on the result, once the new value is on disk (durably, when
        durable); ``undo`` when ``step`` or the write raised, before the error
        goes on.
        """
        with self.hold(wait) as held:
            try:
                new_value, result = step(held.value)
                held.put(new_value)
            except BaseException:
                if undo is not None:
                    undo()
                raise
            if then is not None:
                then(result)
            return result

    def remove_if(self, condition: Callable[[T], bool]) -> bool:
        """Under the lock, delete the file if it exists and ``condition`` holds for its value; True if deleted."""
        with self.hold() as held:
            if not held.existed or not condition(held.value):
                return False
            held.remove()
            return True

    @contextmanager
    def hold(self, wait: float | None = None) -> Iterator[Holding[T]]:
        """Hold the lock for the ``with`` body: the value as read under it, and ways to change the file.

        For a change that spans several files (each held in turn) or must
        see the file as it is once locked; ``transform`` is the one-file case.
        """
        with self._locked(wait):
            value, found = self._read_locked()
            yield Holding(self, value, found)

    def _read_locked(self) -> tuple[T, _OnDisk]:
        """Value and what was on disk (the lock is held); quarantine a file that stays unparsable."""
        try:
            return self._load_patiently()
        except _Unparsable as exc:
            if not self.may_quarantine:
                raise StorageError(f"{self.path} cannot be read ({exc}); fix the file, then try again") from exc
            self._quarantine(str(exc))
            return self.codec.empty(), _OnDisk()

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

    def _write(self, doc: Any, found: _OnDisk) -> None:
        """Replace the file with ``doc``, keeping the old file's indentation and mode (when not the default)."""
        durable = self.fsync and (self.durable_when is None or self.durable_when(doc))
        indent = found.indent if found.existed else self.indent
        try:
            replace_file(self.path, encode_json(doc, indent), fsync=durable,
                         mode=None if found.mode in (None, FILE_MODE) else found.mode)
        except OSError as exc:
            raise storage_error(exc, self.path, "write") from exc

    @contextmanager
    def _locked(self, wait: float | None = None) -> Iterator[None]:
        if not self._dir_ready:
            try:
                ensure_dir(self.path.parent)
            except OSError as exc:
                raise storage_error(exc, self.path.parent, "create the directory") from exc
            self._dir_ready = True
        if self._lock is None:
            self._lock = self.path.with_name(f"{self.path.name}.lock")
        with _locked_at(self._lock, self.path, self.lock_timeout if wait is None else wait, self.shared):
            yield


class Holding(Generic[T]):
    """A file whose lock is held (``LockedJsonFile.hold``): its value read under the lock, and its changes."""

    def __init__(self, file: LockedJsonFile[T], value: T, found: _OnDisk) -> None:
        self._file = file
        self.value = value
        self._found = found

    @property
    def existed(self) -> bool:
        return self._found.existed

    def put(self, value: T) -> None:
        """Write ``value`` (kept mode and indentation) unless it encodes to what is on disk."""
        after = self._file.codec.encode(value)
        if after != self._found.raw:
            self._file._write(after, self._found)
            self._found = _OnDisk(raw=after, existed=True, mode=self._found.mode, indent=self._found.indent)

    def remove(self) -> None:
        """Delete the file (if it exists)."""
        try:
            self._file.path.unlink(missing_ok=True)
        except OSError as exc:
            raise storage_error(exc, self._file.path, "remove") from exc
        self._found = _OnDisk()


@contextmanager
def lock_of(path: Path, timeout: float = DEFAULT_LOCK_TIMEOUT, *, shared: bool = False) -> Iterator[None]:
    """Hold the lock of ``path`` (the ``<path>.lock`` directory, ``swarm.core.flock``) for the ``with`` body.

    ``LockBusyError`` when it is still held after ``timeout`` s (its holder is looked up when the error
    is rendered: a retry loop that drops it never reads ``/proc/locks``);
    ``LockTimeoutError`` when something that is not a lock is in its place.
    """
    with _locked_at(path.with_name(f"{path.name}.lock"), path, timeout, shared):
        yield


@contextmanager
def _locked_at(lock: Path, path: Path, timeout: float, shared: bool) -> Iterator[None]:
    """``lock_of`` with the lock's path given (``LockedJsonFile`` builds it once, not per write)."""
    try:
        held = acquire(lock, timeout, shared=shared)
    except LockTimeout as exc:
        raise LockBusyError(f"could not lock {path} within {timeout:g}s", functools.partial(who_holds, lock)) from exc
    except OSError as exc:  # e.g. a socket or FIFO where the lock directory belongs
        raise LockTimeoutError(f"cannot use the lock {lock}: {exc.strerror}; "
                               f"if another tool left it there, stop that tool and remove it") from exc
    try:
        yield
    finally:
        release(held)


def detect_indent(data: bytes, default: int | None) -> int | None:
    """The indentation ``data`` was written with: spaces per level, None if compact, ``default`` if it cannot tell."""
    if data.strip() in (b"[]", b"{}", b""):
        return default
    newline = data.find(b"\n")
    if newline == -1:
        return None
    line = data[newline + 1:newline + 65]
    return (len(line) - len(line.lstrip(b" "))) or None


_ORJSON_OPTIONS = {None: orjson.OPT_NON_STR_KEYS, 2: orjson.OPT_NON_STR_KEYS | orjson.OPT_INDENT_2}
"""The indentations orjson writes (compact, or 2 spaces as Claude Code writes); any other goes through ``json``."""


def encode_json(doc: Any, indent: int | None = None) -> bytes:
    """UTF-8 JSON, compact or indented by ``indent`` spaces; text that UTF-8 cannot carry (lone surrogates) is
    written escaped.

    Written by orjson (a teammate's turn encodes a dozen documents: its events, transcript lines, the inbox it
    rewrites; orjson takes a tenth of the time ``json`` does); what orjson refuses (a lone surrogate, an int
    past 64 bits) or an indentation it does not write goes through ``json``, as before."""
    options = _ORJSON_OPTIONS.get(indent)
    if options is not None:
        try:
            return orjson.dumps(doc, option=options)
        except orjson.JSONEncodeError:
            pass
    try:
        return json.dumps(doc, ensure_ascii=False, indent=indent).encode()
    except UnicodeEncodeError:
        return json.dumps(doc, ensure_ascii=True, indent=indent).encode()


_DIGITS = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
"""``bytes.translate`` table: every digit becomes ``0``, everything else a space (a digit run is then a run of
``0``s: found by ``in``, ten times faster than a regular expression)."""
_LONG_NUMBER = b"0" * 19
"""19 digits in a row: maybe an int past 64 bits, which orjson would read as a float (losing digits)."""


def decode_json(data: bytes | str) -> Any:
    """The value ``data`` holds: read by orjson, or by ``json`` where orjson refuses (an escaped lone
    surrogate, which JavaScript's ``JSON.stringify`` writes; ``NaN``; UTF-16) or would not read the value
    exactly (an int past 64 bits: 19 digits in a row anywhere send the whole text to ``json``).

    ``ValueError`` for anything that is not JSON, nesting too deep to parse included (``json.loads`` raises
    ``RecursionError`` for that: a file a hostile program wrote must be "not JSON", never a crash)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if _LONG_NUMBER not in raw.translate(_DIGITS):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    try:
        return json.loads(data)
    except RecursionError:
        raise ValueError("nested too deep to parse") from None


def decode_toml(text: str) -> dict[str, Any]:
    """``decode_json``'s counterpart for TOML (team files, playbooks, any TOML file of a folder the guide looks
    at): ``ValueError`` for anything that is not TOML, nesting too deep to parse included (``tomllib`` raises
    ``RecursionError`` for that)."""
    try:
        return tomllib.loads(text)
    except RecursionError:
        raise ValueError("nested too deep to parse") from None
