"""The rules a teammate's gate decides by are built once and kept, and never outlive what they were built from.

``TeammateGate._rules`` runs before every tool call; it keeps what it built
until the team file, the lead's grants or the call's extras change. These
tests change each of those behind the gate's back and check the next call
sees it: a deny rule the person adds to the team file must hold from the next
tool call on, however recently the rules were built.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from swarm.core.home import Home
from swarm.core.protocol import Member
from swarm.core.teams import TeamStore
from swarm.teammate.config import TeammateConfig
from swarm.teammate.session import TeammateSession


@pytest.fixture
def session(home: Home, tmp_path: Path) -> Iterator[TeammateSession]:
    TeamStore(home).create("t")
    TeamStore(home).add_member("t", Member(agent_id="w@t", name="w", is_active=True, status="idle"))
    work = tmp_path / "work"
    work.mkdir()
    made = TeammateSession(TeammateConfig(team="t", name="w", agent_id="w@t", cwd=work), home, {})
    yield made
    made.spec.provider.close()


def _texts(rules: tuple[object, ...]) -> set[str]:
    return {rule.text for rule in rules}  # type: ignore[attr-defined]


def test_the_same_inputs_give_the_rules_already_built(session: TeammateSession) -> None:
    gate = session.gate
    assert gate._rules() is gate._rules()
    assert gate._rules(["Read"]) is gate._rules(["Read"])


def test_a_deny_rule_added_to_the_team_file_holds_from_the_next_call(home: Home, session: TeammateSession) -> None:
    gate = session.gate
    before = gate._rules()
    assert "Bash(rm:*)" not in _texts(before.deny)
    TeamStore(home).update_member("t", "w", disallowed_tools=["Bash(rm:*)"])
    assert "Bash(rm:*)" in _texts(gate._rules().deny)


def test_a_grant_and_a_calls_extras_change_the_rules_and_leave_them_again(session: TeammateSession) -> None:
    gate = session.gate
    plain = gate._rules()
    gate.granted.append("Bash(make:*)")
    assert "Bash(make:*)" in _texts(gate._rules().allow)
    assert "Bash(make:*)" not in _texts(plain.allow)
    assert "Edit" in _texts(gate._rules(["Edit"]).allow)
    assert "Edit" not in _texts(gate._rules().allow)  # a skill's for-the-turn rule is gone with the turn
    assert "Write" in _texts(gate._rules(None, ["Write"]).ask)
    assert "Write" not in _texts(gate._rules().ask)


def test_a_subagents_view_of_the_gate_sees_grants_made_after_it_was_made(session: TeammateSession) -> None:
    gate = session.gate
    gate._rules()
    view = gate.with_mode("plan")
    gate.granted.append("Bash(make:*)")
    assert "Bash(make:*)" in _texts(view._rules().allow)
