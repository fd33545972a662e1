from __future__ import annotations

from swarm.core.text import one_line


def test_one_line() -> None:
    assert one_line("") == "" and one_line("\n  \n") == ""
    assert one_line("  done  ") == "done"
    assert one_line("\nfirst\nsecond") == "first …"
    assert one_line("x" * 100, 10) == "x" * 9 + "…"
