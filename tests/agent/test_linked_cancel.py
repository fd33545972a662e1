"""A child's cancel and interrupt flags follow its parent's, one way, for ``is_set`` and for ``wait`` alike."""

from __future__ import annotations

import threading
import time

from swarm.agent.subagents import LinkedCancel


def test_a_wait_ends_when_the_parent_is_set_and_setting_the_child_never_sets_the_parent() -> None:
    parent = threading.Event()
    child = LinkedCancel(parent)
    assert not child.wait(0.1)  # nothing set: the whole timeout, then False
    threading.Timer(0.2, parent.set).start()
    began = time.monotonic()
    assert child.wait(30)  # the parent's interrupt ends the child's wait (a retry's delay, a backoff)
    assert time.monotonic() - began < 5 and child.is_set()
    other = LinkedCancel(threading.Event())
    other.set()
    assert other.wait(0) and other.is_set() and not other._parent.is_set()
