"""A Bash command read the way the shell will run it, for permission rules.

``parse_command`` parses with ``bashlex`` and returns every simple command the
shell would run: the parts of lists (``;``, ``&&``, ``||``, ``&``, newlines),
pipelines, subshells, ``{ }`` groups, if/for/while bodies, command and process
substitutions, and what wrappers run (``env``, ``timeout``, ``xargs``,
``nohup``, ``bash -c '...'``, ``eval``, ``find -exec`` ...). It also lists the
*hazards*: what an allow rule cannot vouch for, because the rule only names a
command and the shell would do more than run it:

- redirection to or from a file (``>``, ``>>``, ``>|``, ``&>``, ``<``); a
  duplicated descriptor (``2>&1``, ``>&2``) and ``/dev/null`` are fine;
- a background job (``&``: it outlives the call; the tool's
  ``run_in_background`` is the way to start one);
- here-documents and here-strings, command and process substitution,
  parameter expansion (``$X``, ``${X}``), variable assignments (``FOO=1 git``),
  function definitions, a wrapper (its inner command is a guess);
- anything the parser cannot parse (``parsed`` is False).

Each word records whether it is *literal*: the shell passes it as written
(no ``$``, backquote, glob or brace character, no backslash). A deny rule
treats a non-literal word as one that could be anything, so the rule still
matches when in doubt. For a command that cannot be parsed, ``scan_words``
gives every run of plain words between operators, for the same conservative
reading.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

_NOT_LITERAL = re.compile(r"[$`*?\[{\\]")
_HARMLESS_TARGETS = frozenset({"/dev/null"})
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish"})
WRAPPERS = frozenset({
    "command", "builtin", "exec", "nohup", "time", "env", "nice", "ionice", "timeout", "stdbuf", "setsid",
    "sudo", "doas", "xargs", "watch", "flock", "chroot", "unbuffer", "caffeinate", "script", "su", "runuser",
    "parallel", "strace", "ltrace", "busybox", "eval", "source", ".", *_SHELLS,
})
"""Commands that run another command given in their arguments; an allow rule never vouches for them."""
_FIND_RUNS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_SCAN_SPLIT = re.compile(r"[;&|\n()`{}<>]|\$\(")


@dataclass(frozen=True)
class SimpleCommand:
    """One command the shell runs: its words after quote removal, leading assignments dropped."""

    words: tuple[str, ...]
    literal: tuple[bool, ...]
    """Per word: the shell passes it exactly as ``words`` shows (no expansion of any kind)."""

    @property
    def text(self) -> str:
        return " ".join(self.words)


@dataclass(frozen=True)
class ShellCommand:
    text: str
    parsed: bool
    commands: tuple[SimpleCommand, ...] = ()
    hazards: tuple[str, ...] = ()
    """Why an allow rule cannot vouch for the whole command; empty when it can."""
    words: tuple[str, ...] = ()
    """Every word of the command (redirection targets included), for path checks."""

    @property
    def plain(self) -> bool:
        """Parsed, with commands, and nothing an allow rule cannot see."""
        return self.parsed and bool(self.commands) and not self.hazards


@dataclass
class _Reader:
    text: str
    depth: int = 0
    commands: list[SimpleCommand] = field(default_factory=list)
    hazards: list[str] = field(default_factory=list)
    words: list[str] = field(default_factory=list)

    def hazard(self, why: str) -> None:
        if why not in self.hazards:
            self.hazards.append(why)


def parse_command(text: str) -> ShellCommand:
    """The command as the shell would run it; ``parsed`` is False when bashlex cannot read it."""
    reader = _Reader(text)
    if not _read(text, reader):
        return ShellCommand(text, parsed=False, hazards=("the command could not be parsed",))
    return ShellCommand(text, True, tuple(reader.commands), tuple(reader.hazards), tuple(reader.words))


def _read(text: str, reader: _Reader) -> bool:
    if not text.strip():
        return True
    import bashlex  # type: ignore[import-untyped]  # here, not at the top: building its parser costs ~85 ms, paid only by a Bash check

    try:
        nodes = bashlex.parse(text)
    except Exception:  # noqa: BLE001 - bashlex raises many types (ParsingError, NotImplementedError, IndexError ...)
        return False
    saved, reader.text = reader.text, text
    try:
        for node in nodes:
            _visit(node, reader)
    finally:
        reader.text = saved
    return True


def _visit(node: Any, reader: _Reader) -> None:
    kind = node.kind
    if kind == "command":
        _command(node, reader)
        return
    if kind in ("commandsubstitution", "processsubstitution"):
        reader.hazard("command substitution" if kind == "commandsubstitution" else "process substitution")
        _visit(node.command, reader)
        return
    if kind == "function":
        reader.hazard("a function definition")
    if kind == "operator" and node.op == "&":
        reader.hazard("a background job (&)")
    if kind == "word":
        _word(node, reader)
        return
    if kind == "redirect":
        _redirect(node, reader)
        return
    for child in _children(node):
        _visit(child, reader)


def _children(node: Any) -> list[Any]:
    kids = getattr(node, "parts", None)
    if kids is None:
        kids = getattr(node, "list", None)
    return [*(kids or []), *(getattr(node, "redirects", None) or [])]


def _command(node: Any, reader: _Reader) -> None:
    words: list[str] = []
    literal: list[bool] = []
    for part in node.parts:
        if part.kind == "assignment":
            reader.hazard("a variable assignment")
            for child in _children(part):
                _visit(child, reader)
        elif part.kind == "word":
            words.append(part.word)
            literal.append(_word(part, reader))
        elif part.kind == "redirect":
            _redirect(part, reader)
        else:
            _visit(part, reader)
    if words:
        command = SimpleCommand(tuple(words), tuple(literal))
        reader.commands.append(command)
        _unwrap(command, reader)


def _word(node: Any, reader: _Reader) -> bool:
    """Record the word (and visit what it substitutes); True when it is literal."""
    reader.words.append(node.word)
    for child in _children(node):
        if child.kind == "parameter":
            reader.hazard("a parameter expansion")
        else:
            _visit(child, reader)
    raw = reader.text[node.pos[0]:node.pos[1]]
    return not _NOT_LITERAL.search(raw)


def _redirect(node: Any, reader: _Reader) -> None:
    kind, target = node.type, getattr(node, "output", None)
    if kind in ("<<", "<<-"):
        reader.hazard("a here-document")
        return
    if kind == "<<<":
        reader.hazard("a here-string")
    if target is None or isinstance(target, int) or target == "-":
        return  # a duplicated or closed descriptor: 2>&1, >&2, >&-
    literal = _word(target, reader)
    if kind != "<<<" and not (literal and target.word in _HARMLESS_TARGETS):
        reader.hazard("a redirection to or from a file")


def _unwrap(command: SimpleCommand, reader: _Reader) -> None:
    """Add what a wrapper runs: a shell's ``-c`` script or ``eval``'s text parsed, else every tail of its words."""
    name = command.words[0].rsplit("/", 1)[-1]
    if name not in WRAPPERS and not (name == "find" and _FIND_RUNS.intersection(command.words)):
        return
    reader.hazard(f"{name} runs another command")
    script = _script_of(name, command.words[1:])
    if script is not None and reader.depth < 8:
        reader.depth += 1
        parsed = _read(script, reader)
        reader.depth -= 1
        if parsed:
            return
    for start in range(1, len(command.words)):  # the inner command starts somewhere in the arguments
        reader.commands.append(SimpleCommand(command.words[start:], command.literal[start:]))


def _script_of(name: str, args: tuple[str, ...]) -> str | None:
    if name == "eval":
        return " ".join(args)
    if name in _SHELLS:
        for i, arg in enumerate(args):
            if arg.startswith("-") and not arg.startswith("--") and "c" in arg and i + 1 < len(args):
                return args[i + 1]
    return None


def scan_words(text: str) -> list[list[str]]:
    """Plain words of every segment between shell operators, for text the parser could not read.

    Quotes and backslashes are dropped and every tail of a segment is its own
    entry, so a deny rule compared with the start of each entry errs on the
    side of matching.
    """
    out: list[list[str]] = []
    for segment in _SCAN_SPLIT.split(text):
        try:
            words = shlex.split(segment, posix=True)
        except ValueError:
            words = re.sub(r"[\"'\\]", "", segment).split()
        words = [re.sub(r"[\"'\\$]", "", w) for w in words]
        out += [words[i:] for i in range(len(words))]
    return out
