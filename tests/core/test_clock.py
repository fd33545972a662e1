"""The protocol's time stamps: ``now_iso`` writes exactly what ``datetime.isoformat`` would, at every instant."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from swarm.core import clock

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _expected(ns: int) -> str:
    return (EPOCH + timedelta(microseconds=ns // 1000)).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@pytest.mark.parametrize("ns", [
    0, 999_999, 1_000_000, 999_999_999, 1_000_000_000,  # the first millisecond and second boundaries
    1_796_496_838_341_000_000, 1_796_496_838_999_999_999, 1_796_496_839_000_000_000,  # a second turning over
    951_782_399_999_000_000, 951_782_400_000_000_000,  # 2000-02-28T23:59:59.999 -> the leap day
    4_102_444_799_999_999_999,  # 2099-12-31T23:59:59.999
])
def test_now_iso_is_datetimes_form(ns: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(clock.time, "time_ns", lambda: ns)
    assert clock.now_iso() == _expected(ns)


def test_now_iso_across_many_instants_in_any_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """The second's text is kept between calls: going back in time, or jumping ahead, never reuses a stale one."""
    rng = random.Random(7)
    instants = [rng.randrange(0, 4_102_444_800 * 10**9) for _ in range(2000)]
    instants += [1_796_496_838_000_000_000 + step * 250_000_000 for step in range(20)]  # back and forth in a second
    for ns in instants:
        monkeypatch.setattr(clock.time, "time_ns", lambda ns=ns: ns)
        assert clock.now_iso() == _expected(ns)


def test_now_iso_is_now() -> None:
    stamp = clock.now_iso()
    assert stamp.endswith("Z") and len(stamp) == len("2026-11-30T04:22:38.123Z")
    parsed = clock.iso_to_epoch(stamp)
    assert parsed is not None and abs(parsed - datetime.now(UTC).timestamp()) < 5
