from __future__ import annotations

import stat
from pathlib import Path

import pytest

from swarm.core.home import Home, ensure_dir
from swarm.core.names import validate_name
from swarm.errors import InvalidNameError

BAD_NAMES = {
    "../x": "'.'",
    "a/b": "'/'",
    "": "empty",
    "x" * 65: "65 characters",
    "a\x00b": "NUL",
    "a\nb": "U+000A",
    "caf\u00e9": "U+00E9",
    "a b": "U+0020",
}


@pytest.mark.parametrize("name", list(BAD_NAMES))
def test_bad_names_refused_with_the_offending_character(name: str) -> None:
    with pytest.raises(InvalidNameError) as err:
        validate_name(name, "team name")
    message = str(err.value)
    assert BAD_NAMES[name] in message
    assert "\n" not in message


@pytest.mark.parametrize("name", ["a", "team-lead", "A_b-9", "x" * 64])
def test_good_names_pass_unchanged(name: str) -> None:
    assert validate_name(name) == name


def test_home_paths_refuse_traversal(tmp_path: Path) -> None:
    home = Home(tmp_path)
    with pytest.raises(InvalidNameError):
        home.inbox_path("team", "../../etc/passwd")
    with pytest.raises(InvalidNameError):
        home.team_dir("..")


def test_ensure_dir_makes_every_level_private(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "c"
    ensure_dir(target)
    for level in (tmp_path / "a", tmp_path / "a" / "b", target):
        assert stat.S_IMODE(level.stat().st_mode) == 0o700


def test_home_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SWARM_HOME", str(tmp_path / "h"))
    assert Home.from_env().root == tmp_path / "h"
    assert Home.from_env(tmp_path / "o").root == tmp_path / "o"
    monkeypatch.delenv("SWARM_HOME")
    assert Home.from_env().root == Path.home() / ".swarm"
