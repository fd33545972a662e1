"""The sandbox's settings and permissions: layers only narrow where a model could have written, auto-allow runs
sandboxed commands without a prompt (deny and ask rules first), leaving the sandbox asks, and a sandbox that
cannot start says what is missing."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from swarm.agent.permissions.policy import CallFacts, RuleSet, decide
from swarm.agent.permissions.rules import parse_rules
from swarm.agent.permissions.settings import record_settings, settings_digests, settings_sandbox
from swarm.core.protocol import TeamFile
from swarm.agent.sandbox import (
    Sandbox,
    effective_sandbox,
    network_input,
    open_sandbox,
    rule_paths,
    sandbox_facts,
)
from swarm.core.sandbox_config import ResolvedSandbox, SandboxSettings
from swarm.errors import UsageError

ON = ResolvedSandbox(enabled=True)


def write_settings(cwd: Path, doc: dict[str, object], name: str = ".claude/settings.json") -> Path:
    path = cwd / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def test_a_settings_file_changed_since_the_team_recorded_it_only_narrows(tmp_path: Path) -> None:
    """The attacker: a teammate rewrites the settings file to turn the sandbox off and open the network."""
    write_settings(tmp_path, {"sandbox": {"enabled": True, "filesystem": {"allowWrite": ["/data"]}}})
    team = TeamFile(name="t", lead_agent_id="team-lead@t")
    record_settings(team, tmp_path)  # what the lead saw at spawn
    env = dict(os.environ)  # the tests' config dir trusts tmp dirs

    def policy_now() -> ResolvedSandbox:
        return effective_sandbox(settings_sandbox(tmp_path, team.settings_digests or {}, env=env,
                                                  recorded_sandbox=team.settings_sandbox))

    assert policy_now().allow_write == ("/data",)
    write_settings(tmp_path, {"sandbox": {
        "enabled": False, "autoAllowBashIfSandboxed": True, "allowUnsandboxedCommands": True,
        "excludedCommands": ["bash"], "filesystem": {"allowWrite": ["/"], "denyRead": ["/srv/secret"]},
        "network": {"allowedDomains": ["evil.test"], "deniedDomains": ["pypi.org"], "allowAllUnixSockets": True}}})
    policy = policy_now()
    assert policy.enabled  # the file the team recorded turned it on; the rewrite cannot turn it off
    assert policy.allow_write == ("/data",) and policy.excluded_commands == () and policy.allowed_domains == ()
    assert not policy.allow_all_unix_sockets
    assert policy.deny_read == ("/srv/secret",) and policy.denied_domains == ("pypi.org",)  # narrowing counts
    (tmp_path / ".claude" / "settings.json").unlink()
    assert policy_now().enabled  # deleting the file does not turn it off either


def test_a_settings_file_created_after_the_team_looked_cannot_turn_the_sandbox_off(tmp_path: Path) -> None:
    recorded = settings_digests(tmp_path)  # absent
    write_settings(tmp_path, {"sandbox": {"enabled": False, "network": {"allowedDomains": ["*"]}}},
                   ".claude/settings.local.json")
    team = SandboxSettings(enabled=True)
    policy = effective_sandbox(settings_sandbox(tmp_path, recorded, env=os.environ), team)
    assert policy.enabled and policy.allowed_domains == ()


def test_recorded_files_team_member_and_flag_stack_in_order(tmp_path: Path) -> None:
    path = write_settings(tmp_path, {"sandbox": {"network": {"allowedDomains": ["a.test"]}}})
    recorded = {str(path.resolve()): hashlib.sha256(path.read_bytes()).hexdigest()}
    team = SandboxSettings.model_validate({"enabled": True, "network": {"allowedDomains": ["b.test"]}})
    member = SandboxSettings.model_validate({"autoAllowBashIfSandboxed": False})
    policy = effective_sandbox(settings_sandbox(tmp_path, recorded, env=os.environ), team, member)
    assert policy.enabled and not policy.auto_allow_bash_if_sandboxed
    assert policy.allowed_domains == ("a.test", "b.test")


def test_claude_code_defaults() -> None:
    policy = effective_sandbox((SandboxSettings(), SandboxSettings()))
    assert (policy.enabled, policy.auto_allow_bash_if_sandboxed, policy.allow_unsandboxed_commands,
            policy.fail_if_unavailable) == (False, True, True, False)


def test_an_invalid_sandbox_setting_is_one_clear_error(tmp_path: Path) -> None:
    write_settings(tmp_path, {"sandbox": {"enabled": "sometimes"}})
    with pytest.raises(UsageError, match="invalid sandbox settings"):
        settings_sandbox(tmp_path, {}, env=os.environ)


@pytest.fixture
def box(tmp_path: Path) -> Sandbox:
    sandbox = Sandbox(ResolvedSandbox(enabled=True, excluded_commands=("docker",)), env={})
    yield sandbox
    sandbox.close()


def bash(box: Sandbox, cwd: Path, command: str, **extra: object) -> CallFacts:
    args = {"command": command, **extra}
    return CallFacts("Bash", args, read_only=False, cwd=cwd, **sandbox_facts(box, "Bash", args, cwd))


def test_auto_allow_runs_a_sandboxed_command_without_a_prompt(tmp_path: Path, box: Sandbox) -> None:
    call = bash(box, tmp_path, "python3 build.py && make")
    assert decide(call, "default", RuleSet()).verdict == "allow"
    assert decide(call, "default", RuleSet()).by == "sandbox"
    unsandboxed = CallFacts("Bash", {"command": "python3 build.py && make"}, read_only=False, cwd=tmp_path)
    assert decide(unsandboxed, "default", RuleSet()).verdict == "ask"  # the same command, no sandbox: asks


def test_deny_and_ask_rules_apply_before_auto_allow(tmp_path: Path, box: Sandbox) -> None:
    rules = RuleSet(deny=tuple(parse_rules(["Bash(rm:*)"])), ask=tuple(parse_rules(["Bash(git push:*)"])))
    assert decide(bash(box, tmp_path, "rm -rf build"), "default", rules).verdict == "deny"
    assert decide(bash(box, tmp_path, "git push origin main"), "default", rules).verdict == "ask"
    assert decide(bash(box, tmp_path, "bash ./clean.sh"), "default", rules).verdict == "ask"  # might run rm
    assert decide(bash(box, tmp_path, "make"), "plan", rules).verdict == "deny"  # plan mode still refuses


def test_leaving_the_sandbox_goes_through_the_normal_flow(tmp_path: Path, box: Sandbox) -> None:
    out = bash(box, tmp_path, "make", dangerouslyDisableSandbox=True)
    assert decide(out, "default", RuleSet()).verdict == "ask"
    assert decide(bash(box, tmp_path, "docker ps"), "default", RuleSet()).verdict == "ask"  # excluded: unsandboxed
    strict = Sandbox(ResolvedSandbox(enabled=True, allow_unsandboxed_commands=False), env={})
    try:
        refused = decide(bash(strict, tmp_path, "make", dangerouslyDisableSandbox=True), "bypassPermissions",
                         RuleSet())
    finally:
        strict.close()
    assert refused.verdict == "deny" and "allowUnsandboxedCommands" in refused.reason


def test_without_auto_allow_a_sandboxed_command_asks(tmp_path: Path) -> None:
    sandbox = Sandbox(ResolvedSandbox(enabled=True, auto_allow_bash_if_sandboxed=False), env={})
    try:
        assert decide(bash(sandbox, tmp_path, "make"), "default", RuleSet()).verdict == "ask"
    finally:
        sandbox.close()


def test_an_unavailable_sandbox_warns_with_the_fix_or_fails_when_asked_to(tmp_path: Path) -> None:
    said: list[str] = []
    missing = str(tmp_path / "no-bwrap")
    assert open_sandbox(ON, env={}, warn=said.append, bwrap=missing) is None
    assert "bubblewrap (bwrap) is not installed" in said[0] and "apt-get install bubblewrap socat" in said[0]
    with pytest.raises(UsageError, match="failIfUnavailable"):
        open_sandbox(ON.model_copy(update={"fail_if_unavailable": True}), env={}, bwrap=missing)
    assert open_sandbox(ResolvedSandbox(), env={}) is None  # off: nothing to say


def test_edit_and_read_rules_count_as_sandbox_paths_as_in_claude_code() -> None:
    rules = RuleSet(allow=tuple(parse_rules(["Edit(//srv/cache/**)", "Edit(src/*.py)", "Bash(make:*)"])),
                    deny=tuple(parse_rules(["Edit(config/prod.yml)", "Read(~/secrets/**)"])))
    policy = effective_sandbox((SandboxSettings(), SandboxSettings()), rule_paths(rules))
    assert policy.allow_write == ("/srv/cache",)  # a glob that is not a whole directory is skipped
    assert policy.deny_write == ("config/prod.yml",) and policy.deny_read == ("~/secrets",)
    anywhere = rule_paths(RuleSet(allow=tuple(parse_rules(["Edit(//**)", "Edit(/**)"]))))
    assert anywhere.filesystem is not None and anywhere.filesystem.allow_write == ["/", "."]


def test_network_access_is_ruled_as_webfetch_domain_rules(tmp_path: Path) -> None:
    rules = RuleSet(allow=tuple(parse_rules(["WebFetch(domain:*.pythonhosted.org)", "WebFetch(domain:pypi.org)"])),
                    deny=tuple(parse_rules(["WebFetch(domain:evil.test)"])))

    def verdict(host: str, port: int = 443) -> str:
        call = CallFacts("WebFetch", network_input(host, port), read_only=False, cwd=tmp_path)
        return decide(call, "default", rules).verdict

    assert verdict("files.pythonhosted.org") == verdict("pypi.org") == "allow"
    assert verdict("evil.test", 80) == "deny" and verdict("pypi.org.evil.test") == "ask"
    assert verdict("pythonhosted.org") == "ask"  # *.domain covers subdomains only
