"""Skill arguments: $ARGUMENTS, $ARGUMENTS[N], $N, ${CLAUDE_SKILL_DIR}, the ARGUMENTS: rule, and the rendered body."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarm.agent.skills import Skill, render_skill, split_arguments, substitute

DIR = Path("/skills/demo")


@pytest.mark.parametrize("body, args, expected", [
    # positions by index, not by order of appearance
    ("Respond with exactly: $1 $0", "w0 w1", "Respond with exactly: w1 w0"),
    ("$ARGUMENTS[1]-$ARGUMENTS[0]", "w0 w1", "w1-w0"),
    ("$0 and $ARGUMENTS[0]", "same", "same and same"),
    # the whole string as given, quotes included
    ("Run: $ARGUMENTS", 'a "b c"', 'Run: a "b c"'),
    ("$ARGUMENTS.", "x", "x."),
    # shell-like splitting: quotes group words and are removed
    ("[$0] [$1] [$2]", 'a "b c" \'d e\'', "[a] [b c] [d e]"),
    # an unbalanced quote falls back to whitespace splitting
    ("[$0] [$1]", 'say "hi there', '[say] ["hi]'),
    # a missing position is empty
    ("[$0] [$3] [$ARGUMENTS[9]]", "only", "[only] [] []"),
    # $10 is position 10, never $1 then "0"
    ("$10|$1", "a b c d e f g h i j k", "k|b"),
    # a reference needs no word character right after it
    ("$1st $ARGUMENTS_LIST", "a b", "$1st $ARGUMENTS_LIST\n\nARGUMENTS: a b"),
    # the skill directory, which does not count as an argument reference
    ("cd ${CLAUDE_SKILL_DIR}/scripts", "", "cd /skills/demo/scripts"),
    ("cd ${CLAUDE_SKILL_DIR}", "x y", "cd /skills/demo\n\nARGUMENTS: x y"),
    # no reference: arguments appended; none given: nothing appended
    ("Do the thing.", "4127", "Do the thing.\n\nARGUMENTS: 4127"),
    ("Do the thing.", "", "Do the thing."),
    ("Do the thing.", "   ", "Do the thing."),
    ("Echo [$ARGUMENTS]", "", "Echo []"),
    # one pass: text an argument brings in is not substituted again
    ("$0 $1", "$1 ${CLAUDE_SKILL_DIR}", "$1 ${CLAUDE_SKILL_DIR}"),
])
def test_substitute(body: str, args: str, expected: str) -> None:
    assert substitute(body, args, DIR) == expected


@pytest.mark.parametrize("args, words", [
    ("", []),
    ("a  b\tc", ["a", "b", "c"]),
    ('x "y z"', ["x", "y z"]),
    ("it's", ["it's"]),
])
def test_split_arguments(args: str, words: list[str]) -> None:
    assert split_arguments(args) == words


def test_render_skill_starts_with_the_absolute_base_directory(tmp_path: Path) -> None:
    folder = tmp_path / "checksum"
    skill = Skill(name="checksum", body="Run ${CLAUDE_SKILL_DIR}/scripts/checksum.sh $0", directory=folder,
                  path=folder / "SKILL.md")
    assert render_skill(skill, "data.txt") == (
        f"Base directory for this skill: {folder}\n\nRun {folder}/scripts/checksum.sh data.txt")


def test_render_skill_makes_a_relative_directory_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    skill = Skill(name="s", body="Go.", directory=Path("rel/s"), path=Path("rel/s/SKILL.md"))
    assert render_skill(skill, "") == f"Base directory for this skill: {tmp_path / 'rel' / 's'}\n\nGo."
