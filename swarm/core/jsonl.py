"""Append-only JSON Lines files (transcripts, the permission record).

One ``os.write`` per record on an ``O_APPEND`` descriptor, so concurrent
writers never interleave inside a line. Every byte is checked: a write the
disk refuses raises ``StorageError`` (the caller must not act as if the record
were kept). A crash or a failed write can still leave a torn last line; the
next append then starts on a fresh line (it looks at the last byte first), so
the torn line never swallows a good record, and reading skips it (logged).
Only a regular file is appended to or read: a symlink, directory or FIFO in
its place is a ``StorageError``.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from swarm.core.fileio import check_regular, read_regular, storage_error, write_all
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
            write_all(fd, _after_torn_line(fd, path) + line)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise storage_error(exc, path, "append to") from exc


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


def _after_torn_line(fd: int, path: Path) -> bytes:
    """``b"\\n"`` when the file does not end with one (a torn last line), else ``b""``."""
    info = os.fstat(fd)
    check_regular(info.st_mode, path)
    if info.st_size == 0:
        return b""
    return b"" if os.pread(fd, 1, info.st_size - 1) == b"\n" else b"\n"


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
