"""A bad team file is refused before anything starts.

``swarm up`` prints one line on stderr naming the file and the field, exits 2
(a usage error; 1 only for a missing team file, a ``NotFoundError``), creates
no team in the swarm home and starts no teammate process.

The validation cases run the CLI in-process (click's runner, through the same
``SwarmGroup.main`` that turns errors into one line and an exit code) to keep
the suite fast; one case and the missing file also run the installed executable.
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from swarm.cli.main import cli
from tests.runtime.up.helpers import Up, panes, teammate_pids

GOOD_MEMBER = '[[members]]\nname = "alice"\nprompt = "say hi"\n'
TEAM = '[team]\nname = "bad"\n'

CASES = {
    # id: (file text, substrings stderr must contain)
    "unknown-field": (TEAM + GOOD_MEMBER + 'colour = "red"\n', ["members[0].colour", "unknown field"]),
    "bad-team-name": ('[team]\nname = "a/b"\n' + GOOD_MEMBER, ["team.name", "'a/b'"]),
    "bad-member-name": (TEAM + '[[members]]\nname = "a/b"\nprompt = "x"\n', ["members[0].name", "'a/b'"]),
    "lead-as-member": (TEAM + '[[members]]\nname = "team-lead"\nprompt = "x"\n', ["members[0].name", "lead"]),
    "missing-prompt": (TEAM + '[[members]]\nname = "alice"\n', ["members[0].prompt", "missing"]),
    "no-members": (TEAM, ["members", "missing"]),
    "worktree-not-bool": (TEAM + GOOD_MEMBER + 'worktree = "yes"\n', ["members[0].worktree", "boolean", "'yes'"]),
    "bad-policy-rule": (TEAM + '[lead.policy]\nallow = ["Bash()"]\n' + GOOD_MEMBER,
                        ["lead.policy.allow", "bad permission rule", "Bash()"]),
    "bad-member-rule": (TEAM + GOOD_MEMBER + 'allowed_tools = ["Bash(git log"]\n',
                        ["members[0].allowed_tools", "bad permission rule"]),
    "bad-plans": (TEAM + '[lead.policy]\nplans = "sometimes"\n' + GOOD_MEMBER, ["lead.policy.plans", "sometimes"]),
    "missing-playbook": (TEAM + GOOD_MEMBER + 'playbook = "nope.toml"\n', ["members[0].playbook", "nope.toml",
                                                                           "not found"]),
    "duplicate-members": (TEAM + GOOD_MEMBER + GOOD_MEMBER, ["two members", "'alice'"]),
    "unknown-sandbox-setting": (TEAM + '[sandbox]\nenabled = true\n[sandbox.network]\nalowedDomains = ["x"]\n'
                                + GOOD_MEMBER, ["sandbox", "unknown sandbox setting 'alowedDomains'"]),
    "bad-member-sandbox": (TEAM + GOOD_MEMBER + 'sandbox = { enabled = "sometimes" }\n',
                           ["members[0].sandbox.enabled", "boolean"]),
    "not-toml": ("[team\nname = 'bad'\n", ["not valid TOML", "line 1"]),
    "nested-too-deep": (TEAM + "x = " + "[" * 100_000 + "]" * 100_000 + "\n", ["not valid TOML", "nested too deep"]),
    "bad-restart": (TEAM + GOOD_MEMBER + 'restart = "sometimes"\n', ["members[0].restart", "on-failure"]),
    "negative-max-restarts": (TEAM + GOOD_MEMBER + 'max_restarts = -1\n', ["members[0].max_restarts"]),
    "zero-budget": ('[team]\nname = "bad"\nmax_cost = 0\n' + GOOD_MEMBER, ["team.max_cost", "greater than 0"]),
    "zero-slots": ('[team]\nname = "bad"\nmax_concurrent_requests = 0\n' + GOOD_MEMBER,
                   ["team.max_concurrent_requests"]),
    "bad-stall": ('[team]\nname = "bad"\nstall_after = "soon"\n' + GOOD_MEMBER, ["team.stall_after"]),
}


def _assert_nothing_started(up: Up) -> None:
    assert not (up.home / "teams").exists() or list((up.home / "teams").iterdir()) == []
    assert teammate_pids(up.home) == []
    assert panes(up.socket) == []


def _one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("swarm: error: "), stderr
    return lines[0]


@pytest.mark.parametrize("text,needles", list(CASES.values()), ids=list(CASES))
def test_bad_team_file_is_one_line_exit_2_and_starts_nothing(up: Up, text: str, needles: list[str]) -> None:
    path = up.tmp / "team.toml"
    path.write_text(text)
    result = CliRunner().invoke(cli, ["up", str(path), "--headless", "--json", "--cwd", str(up.repo)],
                                env={"SWARM_HOME": str(up.home)}, catch_exceptions=False)
    assert result.exit_code == 2, result.output
    line = _one_error_line(result.stderr)
    for needle in [str(path), *needles]:
        assert needle in line, (needle, line)
    assert result.stdout == ""
    _assert_nothing_started(up)


def test_bad_team_file_through_the_executable(up: Up) -> None:
    path = up.tmp / "team.toml"
    path.write_text(TEAM + GOOD_MEMBER + 'worktree = "yes"\n')
    result = up.run("up", str(path), "--detach")
    assert result.returncode == 2, result.stderr
    line = _one_error_line(result.stderr)
    assert str(path) in line and "members[0].worktree" in line
    assert result.stdout == ""
    _assert_nothing_started(up)


def test_missing_team_file_is_not_found_exit_1(up: Up) -> None:
    path = up.tmp / "nowhere.toml"
    result = up.run("up", str(path), "--detach")
    assert result.returncode == 1, result.stderr
    line = _one_error_line(result.stderr)
    assert str(path) in line and "not found" in line
    _assert_nothing_started(up)


# A file whose mistakes only the spawn notices: the team is created and earlier
# members are started (then stopped) before the error, and the error speaks of
# CLI flags (`--cwd`, `--base`) instead of the file's fields.
SPAWN_TIME = {
    "missing-cwd": ('[[members]]\nname = "bob"\nprompt = "x"\ncwd = "no-such-dir"\n', "members[1].cwd"),
    "base-without-worktree": ('[[members]]\nname = "bob"\nprompt = "x"\nbase = "main"\n', "members[1].base"),
}


@pytest.mark.parametrize("member,field", list(SPAWN_TIME.values()), ids=list(SPAWN_TIME))
def test_member_fields_checked_at_spawn_are_still_file_errors(up: Up, member: str, field: str) -> None:
    path = up.tmp / "team.toml"
    path.write_text(TEAM + GOOD_MEMBER + member)
    result = up.run("up", str(path), "--headless", "--json")
    assert result.returncode == 2, result.stderr
    line = _one_error_line(result.stderr)
    assert str(path) in line and field in line, line
    _assert_nothing_started(up)
