"""JSON (and TOML) files a hostile program can write, nested deeper than a parser recurses: "not JSON" (or
not a team file), never a crash.

A model with a Bash tool (or a cloned repository) can leave ``[[[[…`` 100,000
deep in a project's settings file or its ``.mcp.json``; ``json.loads`` raises
``RecursionError`` for that, which is no ``ValueError``, and every reader here
used to let it escape as a traceback instead of its one-line error. They all
read through ``core.jsonfile.decode_json`` now, which says "not JSON". ``tomllib``
raises ``RecursionError`` too; TOML is read through ``decode_toml``: the guide's
scan of a folder's TOML files skips such a file (``swarm up`` with one:
``tests/runtime/up/test_invalid_files.py``; a playbook: ``tests/models/test_playbook.py``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from swarm.agent.hooks.config import settings_hooks
from swarm.agent.hooks.outcome import _json as hook_output
from swarm.agent.mcp.config import read_json_object
from swarm.agent.permissions.settings import settings_rules, settings_sandbox
from swarm.errors import UsageError

DEEP = b"[" * 100_000 + b"]" * 100_000


@pytest.fixture
def deep_settings(tmp_path: Path) -> Path:
    """A folder (trusted: the tests' config dir trusts tmp dirs) whose project settings file is nested too deep."""
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_bytes(DEEP)
    return tmp_path


def test_permissions_from_it_are_one_clear_error(deep_settings: Path) -> None:
    with pytest.raises(UsageError, match=r"settings\.json: invalid permissions \(nested too deep to parse\)") as err:
        settings_rules(deep_settings, {}, env=os.environ)
    assert "\n" not in str(err.value)


def test_its_sandbox_is_one_clear_error(deep_settings: Path) -> None:
    with pytest.raises(UsageError, match=r"invalid sandbox settings \(nested too deep to parse\)"):
        settings_sandbox(deep_settings, {}, env=os.environ)


def test_its_hooks_are_ignored_with_a_warning(deep_settings: Path, tmp_path: Path) -> None:
    found = settings_hooks(deep_settings, dict(os.environ), None)
    assert not found.hooks
    assert any("not JSON (nested too deep to parse); its hooks were ignored" in w for w in found.warnings)


def test_an_mcp_json_nested_too_deep_is_not_json(tmp_path: Path) -> None:
    path = tmp_path / ".mcp.json"
    path.write_bytes(b"{\"a\":" + DEEP + b"}")
    with pytest.raises(ValueError, match="nested too deep"):
        read_json_object(path)


def test_a_hooks_output_nested_too_deep_is_plain_output() -> None:
    assert hook_output("{\"a\": " + "[" * 100_000 + "]" * 100_000 + "}") is None


def test_a_toml_file_nested_too_deep_is_not_a_team_file(tmp_path: Path) -> None:
    """The guide lists the team files of the folder by parsing every TOML file in it (a cloned repository's)."""
    from swarm.agent.guide import team_files

    (tmp_path / "team.toml").write_text('[team]\nname = "t"\n')
    (tmp_path / "deep.toml").write_bytes(b"x = " + b"[" * 100_000 + b"]" * 100_000)
    assert team_files(tmp_path) == [tmp_path / "team.toml"]
