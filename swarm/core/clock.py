"""Time stamps in the two forms the protocol uses."""

from __future__ import annotations

import time
from datetime import UTC, datetime


def now_ms() -> int:
    """Epoch milliseconds (team file and frame ids)."""
    return int(time.time() * 1000)


def now_iso() -> str:
    """ISO 8601 UTC with milliseconds, e.g. ``2026-11-30T04:22:38.123Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def ms_to_iso(ms: int) -> str:
    """``now_iso``'s form for epoch milliseconds ``ms``."""
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def iso_to_epoch(stamp: str) -> float | None:
    """Seconds since the epoch for an ISO stamp, or None if it does not parse."""
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
