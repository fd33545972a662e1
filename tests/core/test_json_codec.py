"""``encode_json`` / ``decode_json``: orjson where it can, ``json`` where orjson refuses, the same values either way.

Every file swarm writes goes through these two, and other programs (Claude
Code, in JavaScript) write the same files: what one writes, the other must read
back as the same value, whatever the text holds.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swarm.core.jsonfile import decode_json, encode_json

TEXT = st.text(alphabet=st.characters(codec=None))  # lone surrogates, controls, astral characters and all
SCALARS = st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | TEXT | st.floats(
    allow_nan=False, allow_infinity=False)
DOCS = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
                    max_leaves=20)


@settings(max_examples=400, deadline=None)
@given(DOCS, st.sampled_from([None, 2, 4]))
def test_what_is_written_reads_back_as_the_same_value_by_either_reader(doc: object, indent: int | None) -> None:
    data = encode_json(doc, indent)
    assert decode_json(data) == doc
    assert json.loads(data) == doc  # what any other JSON reader sees


@pytest.mark.parametrize("text", ['"cut \\ud83d"', '["\\udc80", 1]'], ids=["lead", "trail"])
def test_an_escaped_lone_surrogate_that_javascript_wrote_is_read(text: str) -> None:
    assert decode_json(text.encode()) == json.loads(text)


def test_a_lone_surrogate_is_written_escaped_and_the_rest_as_utf8() -> None:
    data = encode_json({"a": "é \udc80"})
    assert b"\\udc80" in data and decode_json(data) == {"a": "é \udc80"}
    assert encode_json({"a": "é"}) == '{"a":"é"}'.encode()  # UTF-8, compact


def test_indentation_is_the_one_asked_for() -> None:
    doc = {"a": [1, {"b": None}], "c": {}}
    assert encode_json(doc, 2) == json.dumps(doc, indent=2).encode()  # Claude Code's style, by orjson
    assert encode_json(doc, 4) == json.dumps(doc, indent=4).encode()  # by json: orjson writes only 2
    assert b"\n" not in encode_json(doc) and b" " not in encode_json(doc)


@pytest.mark.parametrize("bad", [b"{bad", b"", b"[1,]", b"\xff\xfe"], ids=["broken", "empty", "trailing", "bytes"])
def test_what_is_not_json_raises_a_value_error_as_json_does(bad: bytes) -> None:
    with pytest.raises(ValueError):
        decode_json(bad)


def test_nesting_too_deep_is_not_json_not_a_crash() -> None:
    with pytest.raises(ValueError, match="nested too deep"):
        decode_json(b"[" * 100_000 + b"]" * 100_000)
