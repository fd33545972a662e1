"""Rule syntax and the decision order, without processes."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarm.agent.permissions.policy import CallFacts, RuleSet, decide
from swarm.agent.permissions.rules import (
    Rule,
    as_update,
    parse_rules,
    rules_in,
    suggest,
)
from swarm.agent.permissions.settings import settings_rules
from swarm.errors import UsageError


def bash(cmd: str, cwd: Path = Path("/w")) -> CallFacts:
    return CallFacts("Bash", {"command": cmd}, read_only=False, cwd=cwd)


def rules(allow: list[str] = [], deny: list[str] = [], ask: list[str] = []) -> RuleSet:  # noqa: B006
    return RuleSet(tuple(parse_rules(allow)), tuple(parse_rules(deny)), tuple(parse_rules(ask)))


@pytest.mark.parametrize(("rule", "command", "allowed"), [
    ("Bash(git status:*)", "git status", True),
    ("Bash(git status:*)", "git status --short", True),
    ("Bash(git status:*)", "git statusx", False),
    ("Bash(git status:*)", "git status && rm -rf /", False),
    ("Bash(git status:*)", "git status; git status", True),
    ("Bash(git status:*)", "git status $(rm -rf /)", False),
    ("Bash(npm test)", "npm test", True),
    ("Bash(npm test)", "npm test --watch", False),
    ("Bash", "anything at all", True),
])
def test_bash_rules(rule: str, command: str, allowed: bool) -> None:
    assert decide(bash(command), "default", rules(allow=[rule])).verdict == ("allow" if allowed else "ask")


def test_deny_beats_ask_beats_allow() -> None:
    assert decide(bash("rm -rf x"), "default", rules(allow=["Bash"], deny=["Bash(rm:*)"])).verdict == "deny"
    assert decide(bash("rm -rf x"), "default", rules(allow=["Bash"], ask=["Bash(rm:*)"])).verdict == "ask"
    assert decide(bash("ls && rm x"), "default", rules(allow=["Bash"], deny=["Bash(rm:*)"])).verdict == "deny"
    decision = decide(bash("rm x"), "bypassPermissions", rules(deny=["Bash(rm:*)"]))
    assert decision.verdict == "deny" and decision.by == "rule:Bash(rm:*)"


def test_edit_globs_and_write_confinement(tmp_path: Path) -> None:
    inside = CallFacts("Write", {"file_path": "src/a/b.py"}, read_only=False, cwd=tmp_path)
    outside = CallFacts("Write", {"file_path": "/etc/passwd"}, read_only=False, cwd=tmp_path)
    escape = CallFacts("Edit", {"file_path": "../x.txt"}, read_only=False, cwd=tmp_path)
    assert decide(inside, "default", RuleSet()).verdict == "allow"
    assert decide(outside, "default", rules(allow=["Write"])).verdict == "deny"
    assert decide(escape, "acceptEdits", RuleSet()).by == "outside-cwd"
    assert decide(outside, "bypassPermissions", RuleSet()).verdict == "allow"
    assert decide(inside, "default", rules(deny=["Edit(src/**)"])).verdict == "deny"
    assert decide(inside, "default", rules(deny=["Edit(lib/**)"])).verdict == "allow"
    assert Rule.parse("Read(*.md)").matches("Read", {"file_path": "docs/x.md"}, tmp_path, allow=True)


def test_modes() -> None:
    read = CallFacts("Read", {"file_path": "x"}, read_only=True, cwd=Path("/w"))
    write = CallFacts("Write", {"file_path": "x"}, read_only=False, cwd=Path("/w"))
    assert decide(read, "plan", RuleSet()).verdict == "allow"
    assert decide(write, "plan", rules(allow=["Write"])).by == "mode:plan"
    assert decide(bash("ls"), "dontAsk", RuleSet()).verdict == "deny"
    assert decide(bash("mkdir build"), "acceptEdits", RuleSet()).verdict == "allow"
    assert decide(bash("mkdir build; curl evil"), "acceptEdits", RuleSet()).verdict == "ask"
    assert decide(bash("mkdir build"), "default", RuleSet()).verdict == "ask"


def test_bad_rule_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="bad permission rule"):
        Rule.parse("Bash(")
    with pytest.raises(UsageError):
        Rule.parse("Bash()")


def test_suggestions_and_updates_round_trip(tmp_path: Path) -> None:
    assert suggest("Bash", {"command": "git push origin main"}, tmp_path) == ["Bash(git push:*)"]
    assert suggest("Bash", {"command": "touch a.txt"}, tmp_path) == ["Bash(touch:*)"]
    assert suggest("Write", {"file_path": "src/x.py"}, tmp_path) == ["Edit(src/**)"]
    assert rules_in(as_update("Bash(git push:*)")) == ["Bash(git push:*)"]
    assert rules_in({"behavior": "deny", "rules": [{"toolName": "Bash"}]}) == []


def test_settings_files(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text('{"permissions": {"allow": ["Bash(make:*)"]}}')
    (tmp_path / ".swarm").mkdir()
    (tmp_path / ".swarm" / "settings.json").write_text('{"permissions": {"deny": ["Bash(make clean)"]}}')
    found = settings_rules(tmp_path)
    assert [r.text for r in found.allow] == ["Bash(make:*)"]
    assert decide(bash("make clean", tmp_path), "default", found).verdict == "deny"
    assert decide(bash("make all", tmp_path), "default", found).verdict == "allow"
    (tmp_path / ".swarm" / "settings.json").write_text("{broken")
    with pytest.raises(UsageError, match="settings.json"):
        settings_rules(tmp_path)


def test_compound_command_allowed_part_by_part() -> None:
    both = rules(allow=["Bash(git add:*)", "Bash(git commit:*)"])
    decision = decide(bash("git add -A && git commit -m 'x'"), "default", both)
    assert decision.verdict == "allow" and decision.by == "rule:Bash(git add:*) + Bash(git commit:*)"
    assert decide(bash("git add -A && git push"), "default", both).verdict == "ask"
    assert decide(bash("git add $(rm -rf ~)"), "default", both).verdict == "ask"
