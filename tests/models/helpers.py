"""Small injected fakes for the model tests."""

from __future__ import annotations


class SleepRecorder:
    """An injected sleep that records the waits instead of sleeping."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
