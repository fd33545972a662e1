"""Read-only agents (Explore, Plan): Bash runs only commands that change nothing, Write and Edit never.

A definition with ``read_only`` gets ``ReadOnlyGate`` around whatever gate
it would have had, wherever it is applied (a subagent, ``swarm run --agent``,
a teammate started with ``--agent-type``): the refusal is a tool error the
model reads, before the call reaches the permission rules, so no rule, mode or
lead can approve it.

``read_only_refusal`` reads the command as the shell will run it
(``permissions.shell_syntax.parse_command``) and accepts it only when every
simple command is a program known to only read, with no option that writes or
runs another program, and nothing else happens: no redirection to a file, no
command substitution, no background job, no wrapper (``env``, ``xargs``,
``bash -c`` ...) — the same hazards an allow rule cannot vouch for. The list
says what is known to be read-only, not what is known to be harmful: anything
not on it is refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from pydantic import BaseModel

from swarm.agent.definitions import AgentDefinition
from swarm.agent.executor import ToolGate
from swarm.agent.permissions.policy import WRITE_TOOLS
from swarm.agent.permissions.shell_syntax import SimpleCommand, parse_command
from swarm.agent.tool_api.base import Tool
from swarm.agent.tool_api.context import ToolContext, ToolError

READERS = frozenset({
    "cat", "head", "tail", "wc", "ls", "pwd", "echo", "printf", "stat", "du", "df", "which", "type", "basename",
    "dirname", "realpath", "readlink", "cut", "tr", "nl", "diff", "cmp", "comm", "md5sum", "sha1sum", "sha256sum",
    "cksum", "grep", "egrep", "fgrep", "true", "false", "test", "[", "column", "fold", "od", "hexdump", "strings",
    "id", "whoami", "uname", "cd", "jq", "tac", "rev", "paste", "join", "seq", "expand", "unexpand",
})
"""Programs that only read whatever their arguments are."""

_GIT_READERS = frozenset({
    "status", "log", "diff", "show", "blame", "ls-files", "ls-tree", "rev-parse", "grep", "describe", "shortlog",
    "cat-file", "rev-list", "merge-base", "show-ref", "whatchanged",
})
_GIT_LISTING = {
    "branch": frozenset({"-a", "-r", "-v", "-vv", "--all", "--remotes", "--verbose", "--show-current", "--list"}),
    "remote": frozenset({"-v", "--verbose"}),
    "tag": frozenset({"-l", "--list"}),
}
"""Git commands that also change things: read-only only with these words alone."""
_GIT_WRITING_OPTIONS = ("--output", "-O", "--open-files-in-pager")
_FIND_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"})
_SED_SCRIPT = re.compile(r"^\s*(?:(?:\d+|\$)(?:\s*,\s*(?:\d+|\$))?\s*[pdq]?|s/[^/]*/[^/]*/[gpI0-9]*)\s*$")
"""A sed script of line ranges (``10,20p``) or a plain substitution (``s/a/b/g``): nothing that writes or runs."""
_SED_OPTIONS = frozenset({"--quiet", "--silent", "--regexp-extended", "--separate", "--null-data", "--unbuffered",
                          "--posix", "--debug", "--sandbox"})
_SED_FLAGS = re.compile(r"^-[nErsuz]*e?$")
"""Short sed flags that only change how it reads (``-n``, ``-E`` ...), possibly ending in ``-e`` (a script follows)."""


def read_only_refusal(command: str) -> str | None:
    """Why ``command`` may change something (a sentence for the model); None when it only reads."""
    parsed = parse_command(command)
    if not parsed.parsed:
        return "the command could not be parsed"
    if parsed.hazards:
        return f"the shell would do more than run it ({'; '.join(parsed.hazards)})"
    if not parsed.commands:
        return "there is no command to run"
    for simple in parsed.commands:
        why = _refusal(simple)
        if why is not None:
            return why
    return None


def _refusal(command: SimpleCommand) -> str | None:
    name, args = command.words[0], command.words[1:]
    if not command.literal[0]:
        return f"the program name {name!r} is not literal"
    if name in READERS:
        return None
    check = _CHECKED.get(name)
    return f"{name} is not a read-only command" if check is None else check(args)


def _git(args: Sequence[str]) -> str | None:
    words = list(args)
    while words[:1] == ["--no-pager"] or (words[:1] == ["-C"] and len(words) > 1):
        del words[: 1 if words[0] == "--no-pager" else 2]
    if not words or words[0].startswith("-"):
        return "git options before the subcommand (other than -C DIR and --no-pager) are not allowed here"
    sub, rest = words[0], words[1:]
    if any(w.startswith(_GIT_WRITING_OPTIONS) for w in rest):
        return f"git {sub} with an option that writes a file or runs a program"
    if sub in _GIT_READERS or (sub == "stash" and rest[:1] == ["list"]):
        return None
    listing = _GIT_LISTING.get(sub)
    if listing is not None and all(w in listing for w in rest):
        return None
    return f"git {' '.join(words[:2])} may change the repository"


def _find(args: Sequence[str]) -> str | None:
    actions = sorted(_FIND_ACTIONS.intersection(args))
    return f"find {actions[0]} changes files or runs a program" if actions else None


def _sed(args: Sequence[str]) -> str | None:
    scripts: list[str] = []
    expect_script = False
    for word in args:
        if expect_script or (not word.startswith("-") and not scripts):
            scripts.append(word)
            expect_script = False
        elif word in ("-e", "--expression") or (_SED_FLAGS.match(word) and word.endswith("e")):
            expect_script = True
        elif word.startswith("-") and word not in _SED_OPTIONS and not _SED_FLAGS.match(word):
            return f"sed {word} may edit in place or read a script file; use Read to see lines"
    bad = [s for s in scripts if not _SED_SCRIPT.match(s)]
    return f"the sed script {bad[0]!r} may write or run something; use Read to see lines" if bad else None


def _refusing(short: str = "", long: tuple[str, ...] = (), operands: int | None = None,
              ) -> Callable[[Sequence[str]], str | None]:
    """A check refusing the ``short`` option letters (also inside ``-abc``), options starting with ``long``,
    and more than ``operands`` words that are not options."""
    def check(args: Sequence[str]) -> str | None:
        for word in args:
            is_long = word.startswith("--")
            if (is_long and long and word.startswith(long)) or (
                    not is_long and word.startswith("-") and set(word[1:]) & set(short)):
                return f"{word} writes or runs something"
        if operands is not None and len([w for w in args if not w.startswith("-")]) > operands:
            return f"more than {operands} file operand: the last one may be written"
        return None
    return check


_CHECKED: dict[str, Callable[[Sequence[str]], str | None]] = {
    "git": _git, "find": _find, "sed": _sed,
    "sort": _refusing("o", ("--output", "--compress-program")),
    "rg": _refusing(long=("--pre",)),
    "tree": _refusing("o"),
    "file": _refusing("C", ("--compile",)),
    "date": _refusing("s", ("--set",)),
    "uniq": _refusing(operands=1),
}
"""Programs that only read unless given certain options or operands: their words are checked as written
(a glob is not expanded first, so a file named like an option is not caught)."""


class ReadOnlyGate:
    """A gate that refuses what a read-only agent may not do, then asks ``inner`` (None: everything else runs)."""

    def __init__(self, inner: ToolGate | None) -> None:
        self.inner = inner

    @property
    def mode(self) -> str:
        """The inner gate's mode; without one every call that is not refused runs, as in bypassPermissions."""
        return self.inner.mode if self.inner is not None else "bypassPermissions"

    def with_mode(self, mode: str) -> ToolGate:
        return ReadOnlyGate(self.inner.with_mode(mode) if self.inner is not None else None)

    def authorize(self, tool: Tool[BaseModel], args: BaseModel, tool_use_id: str, ctx: ToolContext) -> BaseModel:
        if tool.name in WRITE_TOOLS:
            raise ToolError(f"this agent is read-only: {tool.name} is not allowed")
        if tool.name == "Bash":
            why = read_only_refusal(str(getattr(args, "command", "")))
            if why is not None:
                raise ToolError(f"this agent is read-only and runs only commands that change nothing: {why}. "
                                "Use Read, Grep and Glob, or a reading command (ls, cat, grep, git log ...)")
        return args if self.inner is None else self.inner.authorize(tool, args, tool_use_id, ctx)


def read_only_gate(gate: ToolGate | None, definition: AgentDefinition | None) -> ToolGate | None:
    """``gate``, wrapped in ``ReadOnlyGate`` when ``definition`` is read-only (Explore, Plan)."""
    if definition is None or not definition.read_only:
        return gate
    return ReadOnlyGate(gate)
