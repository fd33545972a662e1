"""Playbook files: TOML and JSON loading, validation errors, templating helpers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from swarm.errors import NotFoundError, UsageError
from swarm.models.playbook import (
    load_playbook,
    parse_playbook,
    render,
    render_value,
    slots,
)

TOML = """
[vars]
lead = "team-lead"

[default]
text = "nothing for {first_line}"

[[rules]]
name = "fix"
match = 'fix (?P<file>\\S+)'
on = "prompt"

[[rules.steps]]
tool_calls = [{ name = "Edit", input = { file_path = "{file}", old_string = "a", new_string = "b" } }]

[[rules.steps]]
text = "fixed {file}"

[[rules]]
match = "ping"
once = true
text = "pong"
"""

AS_DATA: dict[str, Any] = {
    "vars": {"lead": "team-lead"},
    "default": {"text": "nothing for {first_line}"},
    "rules": [
        {"name": "fix", "match": "fix (?P<file>\\S+)", "on": "prompt", "steps": [
            {"tool_calls": [{"name": "Edit", "input": {"file_path": "{file}", "old_string": "a", "new_string": "b"}}]},
            {"text": "fixed {file}"}]},
        {"match": "ping", "once": True, "text": "pong"},
    ],
}


def test_toml_and_json_load_to_the_same_playbook(tmp_path: Path) -> None:
    toml_path, json_path = tmp_path / "p.toml", tmp_path / "p.json"
    toml_path.write_text(TOML, encoding="utf-8")
    json_path.write_text(json.dumps(AS_DATA), encoding="utf-8")
    from_toml, from_json = load_playbook(toml_path), load_playbook(json_path)
    assert from_toml.model_dump() == from_json.model_dump()
    assert from_toml.rules[0].steps[1].text == "fixed {file}"
    assert from_toml.rules[1].once is True
    assert from_toml.source == str(toml_path)


@pytest.mark.parametrize(("rule", "where"), [
    ({"match": "x", "on": "sometimes", "text": "t"}, "rules[1].on"),
    ({"match": "(unclosed", "text": "t"}, "rules[1].match"),
    ({"match": "x", "text": "t", "tool_call": []}, "rules[1].tool_call"),
    ({"match": "x", "tool_calls": [{"input": {}}]}, "rules[1].tool_calls[0].name"),
    ({"match": "x", "steps": [{"text": "a"}, {}]}, "rules[1].steps[1]"),
    ({"match": "x", "text": 5}, "rules[1].text"),
])
def test_invalid_rule_names_file_rule_index_and_field(tmp_path: Path, rule: dict[str, Any], where: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"rules": [{"match": "ok", "text": "fine"}, rule]}), encoding="utf-8")
    with pytest.raises(UsageError) as caught:
        load_playbook(path)
    message = str(caught.value)
    assert str(path) in message
    assert f"{where}:" in message
    assert "\n" not in message


@pytest.mark.parametrize(("rule", "reason"), [
    ({"match": "x"}, "a rule needs text, tool_calls or steps"),
    ({"match": "x", "text": "t", "steps": [{"text": "s"}]}, "give either text/tool_calls or steps, not both"),
])
def test_rule_shape_errors_say_what_is_wrong(rule: dict[str, Any], reason: str) -> None:
    with pytest.raises(UsageError, match=r"rules\[0\]: " + reason):
        parse_playbook({"rules": [rule]}, source="inline.toml")


def test_unparsable_toml_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.toml"
    path.write_text("[[rules]\nmatch = ", encoding="utf-8")
    with pytest.raises(UsageError, match=f"playbook {path} does not parse"):
        load_playbook(path)


@pytest.mark.parametrize(("name", "content"), [
    ("deep.json", b"[" * 100_000 + b"]" * 100_000),
    ("deep.toml", b"x = " + b"[" * 100_000 + b"]" * 100_000),
    ("latin1.toml", b"[[rules]]\nmatch = '\xe9'\n"),
], ids=["json-nested-too-deep", "toml-nested-too-deep", "not-utf8"])
def test_a_hostile_playbook_is_one_line_error_not_a_crash(tmp_path: Path, name: str, content: bytes) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(UsageError, match=f"playbook {path} does not parse") as err:
        load_playbook(path)
    assert "\n" not in str(err.value)


def test_missing_playbook_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(NotFoundError, match="does not exist"):
        load_playbook(tmp_path / "nope.toml")


def test_render_fills_known_escapes_braces_and_leaves_the_rest() -> None:
    values = {"a": "1", "0": "zero"}
    assert render("{a}-{0}-{{a}}-{{{a}}}-{unknown}-{\"k\": 2}-{", values) == '1-zero-{a}-{1}-{unknown}-{"k": 2}-{'
    assert slots("{a} {{b}} {0} {x.y} {c}") == {"a", "0", "c"}


def test_render_value_templates_strings_only_and_keeps_keys() -> None:
    value = {"{a}": ["{a}", 2, None, {"deep": "x{a}"}], "flag": True}
    assert render_value(value, {"a": 'q"uote'}) == {"{a}": ['q"uote', 2, None, {"deep": 'xq"uote'}], "flag": True}
