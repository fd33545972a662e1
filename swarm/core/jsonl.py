"""Append-only JSON Lines files (transcripts, the permission record).

One ``os.write`` per record on an ``O_APPEND`` descriptor, so concurrent
writers never interleave inside a line; a line torn by a crash is skipped
(and logged) on reading.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

from swarm.core.home import FILE_MODE, ensure_dir
from swarm.core.jsonfile import encode_json

log = logging.getLogger(__name__)


def append_record(path: Path, record: dict[str, Any], *, durable: bool) -> None:
    """Append ``record`` as one line; ``durable`` fsyncs it before returning."""
    ensure_dir(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
    try:
        os.write(fd, encode_json(record) + b"\n")
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)


def read_records(path: Path) -> list[dict[str, Any]]:
    """Every line of ``path`` that is a JSON object, in order; [] if the file is missing."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    records = []
    for number, line in enumerate(raw.splitlines(), 1):
        try:
            record = json.loads(line)
        except ValueError:  # a line torn by a crash (JSONDecodeError, UnicodeDecodeError)
            log.warning("skipped torn line", extra={"path": str(path), "line": number})
            continue
        if isinstance(record, dict):
            records.append(record)
    return records
