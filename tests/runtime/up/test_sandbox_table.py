"""A team file's ``[sandbox]`` and a member's ``sandbox`` reach the team file and the member's spawn request."""

from __future__ import annotations

from pathlib import Path

from swarm.core.home import Home
from swarm.core.teams import TeamStore
from swarm.runtime.up import _prepare_team, _request
from swarm.runtime.upfile import load_upfile

TEAM_FILE = """
[team]
name = "boxed"

[sandbox]
enabled = true
[sandbox.network]
allowedDomains = ["pypi.org"]

[[members]]
name = "alice"
prompt = "build it"
sandbox = { autoAllowBashIfSandboxed = false, filesystem = { denyRead = ["secrets"] } }

[[members]]
name = "bob"
prompt = "test it"
"""


def test_claude_codes_field_names_are_read_for_the_team_and_each_member(tmp_path: Path) -> None:
    path = tmp_path / "team.toml"
    path.write_text(TEAM_FILE)
    spec = load_upfile(path)
    assert spec.sandbox is not None and spec.sandbox.wire() == {"enabled": True,
                                                                "network": {"allowedDomains": ["pypi.org"]}}
    alice, bob = (_request(spec, member, tmp_path, None) for member in spec.members)
    assert alice.sandbox is not None and alice.sandbox.wire() == {
        "autoAllowBashIfSandboxed": False, "filesystem": {"denyRead": ["secrets"]}}
    assert bob.sandbox is None  # the team's [sandbox] applies to bob through the team file


def test_the_teams_sandbox_is_written_into_its_team_file(tmp_path: Path) -> None:
    path = tmp_path / "team.toml"
    path.write_text(TEAM_FILE)
    home = Home(tmp_path / "home")
    _prepare_team(home, load_upfile(path), tmp_path, env={})
    team = TeamStore(home).get("boxed").sandbox
    assert team is not None and team.enabled and team.network is not None
    assert team.network.allowed_domains == ["pypi.org"]
