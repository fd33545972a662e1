"""Append-only JSON Lines files (transcripts, the permission record).

One ``os.write`` per record on an ``O_APPEND`` descriptor, so concurrent
writers never interleave inside a line. Every byte is checked: a write the
disk refuses raises ``StorageError`` (the caller must not act as if the record
were kept). A crash or a failed write can still leave a torn last line; the
next append then starts on a fresh line (it looks at the last byte first), so
the torn line never swallows a good record, and reading skips it (logged).
Only a regular file is appended to or read: a symlink, directory or FIFO in
its place is a ``StorageError``.

``append_record`` opens the file for each record; ``Appender`` is for a file
one process appends to all its life (a teammate's transcript and events): it
keeps one ``O_APPEND`` descriptor, so a record costs a ``stat`` of the path
and a ``write`` (plus the ``fsync`` when durable) where ``append_record``
costs a directory check, an open, an ``fstat``, a read of the last byte and a
close. The ``stat`` is what notices the file removed, renamed or replaced
under it (then it opens the path again), and its size is what says another
writer appended since (then the last byte is looked at again).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import weakref
from pathlib import Path
from typing import Any

from swarm.core.fileio import check_regular, close_quietly, read_regular, storage_error, write_all
from swarm.core.home import FILE_MODE, ensure_dir
from swarm.core.jsonfile import encode_json

log = logging.getLogger(__name__)

_APPEND = os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def append_record(path: Path, record: dict[str, Any], *, durable: bool) -> None:
    """Append ``record`` as one line; ``durable`` fsyncs it before returning."""
    line = encode_json(record) + b"\n"
    try:
        ensure_dir(path.parent)
        fd = os.open(path, _APPEND, FILE_MODE)
        try:
            info = os.fstat(fd)
            check_regular(info.st_mode, path)
            write_all(fd, _after_torn_line(fd, info.st_size) + line)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise storage_error(exc, path, "append to") from exc


class Appender:
    """One append-only JSONL file kept open by its writer: ``append`` as ``append_record`` does, for less.

    With ``max_bytes``, a file that has reached that size is renamed to ``rotated`` (replacing the one
    before) and a fresh file started before the next record. Safe to use from several threads.
    """

    def __init__(self, path: Path, *, max_bytes: int | None = None, rotated: Path | None = None) -> None:
        if (max_bytes is None) != (rotated is None):
            raise ValueError("max_bytes and rotated go together")
        self.path = path
        self.max_bytes = max_bytes
        self.rotated = rotated
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._file: tuple[int, int] = (0, 0)
        """``(st_dev, st_ino)`` of the file ``_fd`` is open on."""
        self._end = -1
        """The file's size after this appender's last write (-1: unknown, look at the last byte)."""
        self._closer = weakref.finalize(self, close_quietly, None)

    def append(self, record: dict[str, Any], *, durable: bool) -> None:
        """Append ``record`` as one line; ``durable`` fsyncs it before returning (StorageError if refused)."""
        line = encode_json(record) + b"\n"
        with self._lock:
            try:
                fd, size = self._current()
                if self.max_bytes is not None and self.rotated is not None and size >= self.max_bytes:
                    os.replace(self.path, self.rotated)
                    self._drop()
                    fd, size = self._current()
                data = (b"" if size == self._end else _after_torn_line(fd, size)) + line
                self._end = -1  # until every byte is known written
                write_all(fd, data)
                self._end = size + len(data)
                if durable:
                    os.fsync(fd)
            except OSError as exc:
                self._drop()  # the next record opens the path again and looks at its last byte
                raise storage_error(exc, self.path, "append to") from exc

    def sync(self) -> None:
        """fsync the file: every record appended so far is on disk when this returns (StorageError if not)."""
        held = self.descriptor()  # fsync'd outside the lock: appends go on
        if held is None:
            sync_records(self.path)
            return
        try:
            os.fsync(held)
        except OSError as exc:
            raise storage_error(exc, self.path, "sync") from exc
        finally:
            os.close(held)

    def descriptor(self) -> int | None:
        """A copy of the descriptor the records were written to (the caller closes it), to fsync them by; None
        when none is held (then ``sync_records`` on the path)."""
        with self._lock:
            return os.dup(self._fd) if self._fd is not None else None

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _current(self) -> tuple[int, int]:
        """The descriptor of the file now at ``path`` and its size: the one held, or ``path`` opened again."""
        if self._fd is not None:
            try:
                info = os.stat(self.path, follow_symlinks=False)
            except FileNotFoundError:
                info = None
            if info is not None and (info.st_dev, info.st_ino) == self._file:
                return self._fd, info.st_size
            self._drop()  # removed, rotated or replaced under this writer
        ensure_dir(self.path.parent)
        fd = os.open(self.path, _APPEND, FILE_MODE)
        try:
            info = os.fstat(fd)
            check_regular(info.st_mode, self.path)
        except BaseException:
            os.close(fd)
            raise
        self._fd, self._file, self._end = fd, (info.st_dev, info.st_ino), -1
        self._closer.detach()
        self._closer = weakref.finalize(self, close_quietly, fd)
        return fd, info.st_size

    def _drop(self) -> None:
        if self._fd is not None:
            self._closer.detach()
            close_quietly(self._fd)
            self._fd, self._end = None, -1


def sync_records(path: Path) -> None:
    """fsync ``path``: the records appended to it without ``durable`` are on disk when this returns."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            check_regular(os.fstat(fd).st_mode, path)
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise storage_error(exc, path, "sync") from exc


def _after_torn_line(fd: int, size: int) -> bytes:
    """``b"\\n"`` when the file (``size`` bytes) does not end with one (a torn last line), else ``b""``."""
    if size == 0:
        return b""
    return b"" if os.pread(fd, 1, size - 1) == b"\n" else b"\n"


def read_records(path: Path) -> list[dict[str, Any]]:
    """Every line of ``path`` that is a JSON object, in order; [] if the file is missing."""
    try:
        found = read_regular(path)
    except OSError as exc:
        raise storage_error(exc, path, "read") from exc
    if found is None:
        return []
    records = []
    for number, line in enumerate(found[0].splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):  # torn by a crash, junk, or nested too deep to parse
            log.warning("skipped unreadable line", extra={"path": str(path), "line": number})
            continue
        if isinstance(record, dict):
            records.append(record)
    return records
