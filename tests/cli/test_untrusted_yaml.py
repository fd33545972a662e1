"""A repository's YAML cannot stall or kill swarm: a bomb in a definition or skill is one warning line.

A 550-byte alias bomb (each level nine aliases of the one before), YAML nested
too deep for the parser, and a file too big to be a definition are planted in
a repository's ``.claude/agents`` and ``.claude/skills``; ``swarm agents`` and
``swarm skills`` (the installed executable) list the rest in a second or two,
with one warning line per bad file.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.agent.conftest import BOMB, DEEP

Run = Callable[..., subprocess.CompletedProcess[str]]
BIG = "---\ndescription: big\n---\n" + "x" * (300 * 1024) + "\n"


def _plant(repo: Path, command: str, stem: str, text: str) -> Path:
    path = (repo / ".claude" / "agents" / f"{stem}.md" if command == "agents"
            else repo / ".claude" / "skills" / stem / "SKILL.md")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize("command", ["agents", "skills"])
def test_a_yaml_bomb_is_one_warning_and_the_rest_still_loads(run_exe: Run, repo: Path, command: str) -> None:
    assert len(BOMB.encode()) <= 600
    planted = {stem: _plant(repo, command, stem, text)
               for stem, text in [("bomb", BOMB), ("deep", DEEP), ("big", BIG)]}
    _plant(repo, command, "good", "---\ndescription: a good one\n---\nbody\n")

    began = time.monotonic()
    result = run_exe(command, "--json", "--cwd", str(repo), timeout=60)
    took = time.monotonic() - began

    assert result.returncode == 0, result.stderr[-2000:]
    assert took < 10, f"swarm {command} took {took:.1f}s"
    names = [entry["name"] for entry in json.loads(result.stdout)]
    assert "good" in names and not {"bomb", "deep", "big"} & set(names), names
    warnings = result.stderr.splitlines()
    assert len(warnings) == 3 and all(w.startswith("swarm: warning: ") for w in warnings), result.stderr
    said = {stem: next(w for w in warnings if f"{path}: " in w) for stem, path in planted.items()}
    assert "frontmatter: YAML aliases (*a) are not allowed" in said["bomb"], said
    assert "frontmatter: nested deeper than" in said["deep"], said
    assert "file: larger than 256 KiB" in said["big"], said
