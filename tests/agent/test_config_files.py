"""The frontmatter reader bounds the YAML it is given: size, aliases, nesting."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from swarm.agent.config_files import (
    FILE_LIMIT,
    FRONTMATTER_LIMIT,
    ConfigFileError,
    read_markdown,
    split_frontmatter,
)
from tests.agent.conftest import BOMB, DEEP



def test_aliases_are_refused_before_anything_expands_them() -> None:
    began = time.monotonic()
    with pytest.raises(ConfigFileError, match=r"^frontmatter: YAML aliases \(\*a\) are not allowed"):
        split_frontmatter(BOMB)
    assert time.monotonic() - began < 1
    with pytest.raises(ConfigFileError, match="aliases"):
        split_frontmatter("---\ndescription: d\nbase: &b {x: 1}\nmore:\n  <<: *b\n---\n")


def test_nesting_is_bounded_with_a_line_to_fix() -> None:
    with pytest.raises(ConfigFileError, match=r"^frontmatter: nested deeper than \d+ levels at line 3;"):
        split_frontmatter(DEEP)
    fields, _ = split_frontmatter("---\ndescription: d\nhooks: {a: [{b: [1]}]}\n---\n")
    assert fields["hooks"] == {"a": [{"b": [1]}]}  # a few levels, as real frontmatter has, still load


def test_frontmatter_beyond_its_limit_is_refused_unparsed() -> None:
    text = "---\ndescription: d\n" + "# padding\n" * (FRONTMATTER_LIMIT // 10 + 1) + "---\n"
    with pytest.raises(ConfigFileError, match=r"^frontmatter: more than \d+ KiB of YAML;"):
        split_frontmatter(text)


def test_anchors_without_aliases_and_plain_fields_still_load() -> None:
    fields, body = split_frontmatter("---\ndescription: &d a thing\ntools: [Read, Grep]\n---\nthe body\n")
    assert fields == {"description": "a thing", "tools": ["Read", "Grep"]} and body == "the body"


def test_a_file_beyond_its_limit_is_not_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "big.md"
    path.write_text("---\ndescription: d\n---\n" + "x" * FILE_LIMIT)
    with pytest.raises(ConfigFileError, match=r"^file: larger than \d+ KiB;"):
        read_markdown(path)
    path.write_text("---\ndescription: d\n---\n" + "x" * (FILE_LIMIT - 100))
    assert read_markdown(path).endswith("x")
