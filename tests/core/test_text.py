from __future__ import annotations

import json
import logging

from swarm.core.text import TerminalLogFormatter, for_terminal, json_for_terminal, one_line, visible

CONTROLS = "\x1b]52;c;eA==\x07\x1b[2J\x9b2J\x9d0;t\x9c\x7f\x08\r\u202e\u2066\u2028\x00"


def test_one_line() -> None:
    assert one_line("") == "" and one_line("\n  \n") == ""
    assert one_line("  done  ") == "done"
    assert one_line("\nfirst\nsecond") == "first …"
    assert one_line("x" * 100, 10) == "x" * 9 + "…"


def test_for_terminal_shows_every_control_escaped_and_keeps_lines_and_tabs() -> None:
    shown = for_terminal(f"a{CONTROLS}\nb\tc\r\nd")
    assert shown == ("a\\x1b]52;c;eA==\\x07\\x1b[2J\\x9b2J\\x9d0;t\\x9c\\x7f\\x08\\r\\u202e\\u2066\\u2028\\x00"
                     "\nb\tc\nd")
    assert all(ch.isprintable() or ch in "\n\t" for ch in shown)
    assert for_terminal(shown) == shown  # what it shows is shown as it is
    assert for_terminal("plain — ünïcödé 🙂") == "plain — ünïcödé 🙂"


def test_visible_is_one_line() -> None:
    assert visible("a\nb\tc\x1b") == "a\\nb\\tc\\x1b"


def test_json_for_terminal_is_the_same_json_with_nothing_a_terminal_acts_on() -> None:
    data = {"k": f"v{CONTROLS}\U000e0041\xa0", "n": [1, "ü"]}
    text = json_for_terminal(json.dumps(data, indent=2, ensure_ascii=False))
    assert json.loads(text) == data
    assert all(ch.isprintable() or ch == "\n" for ch in text)
    assert "\\u009b2J" in text and "\\udb40\\udc41" in text and "ü" in text


def test_a_log_line_quoting_a_model_is_made_safe_for_the_terminal() -> None:
    record = logging.LogRecord("swarm.teammate", logging.WARNING, __file__, 1, "skill failed: %s", (CONTROLS,), None)
    line = TerminalLogFormatter("%(levelname)s %(message)s").format(record)
    assert line.startswith("WARNING skill failed: \\x1b]52;c;") and line.isprintable()
