"""A Bash command read the way the shell will run it, for permission rules.

``parse_command`` parses with ``bashlex`` and returns every simple command the
shell would run (``commands``): the parts of lists (``;``, ``&&``, ``||``,
``&``, newlines), pipelines, subshells, ``{ }`` groups, if/for/while bodies,
command and process substitutions, function bodies, and what wrappers run
(``env``, ``timeout``, ``xargs``, ``nohup``, ``sudo``, ``chrt``, ``bash -c
'...'``, ``eval``, ``find -exec``, a command string such as ``env -S '...'``
or ``script -c '...'`` ...). It also lists the *hazards*: what an allow rule
cannot vouch for, because the rule only names a command and the shell would
do more than run it:

- redirection to or from a file (``>``, ``>>``, ``>|``, ``&>``, ``<``); a
  duplicated descriptor (``2>&1``, ``>&2``) and ``/dev/null`` are fine;
- a background job (``&``: it outlives the call; the tool's
  ``run_in_background`` is the way to start one);
- here-documents and here-strings, command and process substitution,
  parameter expansion (``$X``, ``${X}``), variable assignments (``FOO=1 git``),
  function definitions, a wrapper (its inner command is a guess);
- anything the parser cannot parse (``parsed`` is False).

For deny and ask rules two more lists say what *might* run:

- ``maybe``: commands swarm cannot be sure of — the later words of a command
  it does not know as a wrapper (``chrt 0 git push`` if ``chrt`` were
  unknown, ``echo git push``), and text in an argument, a here-document or a
  here-string read as a script (``python3 -c 'os.system("git push")'``);
- ``opaque``: why a script runs that swarm cannot see at all — a shell or
  ``source`` reading a file, stdin or a process substitution (``echo ... |
  sh``, ``bash <(...)``, ``sh <<EOF``), or ``BASH_ENV``/``ENV`` set.

Each word records whether it is *literal*: the shell passes it as written
(no ``$``, backquote, glob or brace character, backslash or process
substitution). A deny rule
treats a non-literal word as one that could be anything, so the rule still
matches when in doubt. For a command that cannot be parsed, ``scan_words``
gives every run of plain words between operators, for the same conservative
reading.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field
from typing import Any

_NOT_LITERAL = re.compile(r"[$`*?\[{\\]|[<>]\(")
_HARMLESS_TARGETS = frozenset({"/dev/null"})
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "yash", "fish", "ash", "csh", "tcsh", "rbash"})
_SOURCES = frozenset({"source", "."})
WRAPPERS = frozenset({
    "command", "builtin", "exec", "nohup", "time", "env", "nice", "ionice", "timeout", "stdbuf", "setsid",
    "sudo", "doas", "xargs", "watch", "flock", "chroot", "unbuffer", "caffeinate", "script", "su", "runuser",
    "parallel", "strace", "ltrace", "busybox", "eval", "chrt", "taskset", "unshare", "nsenter", "prlimit",
    "setarch", "linux32", "linux64", "numactl", "cgexec", "sg", "pkexec", "fakeroot", "faketime", "firejail",
    "systemd-run", "xvfb-run", "dbus-run-session", "valgrind", "catchsegv", "entr", "retry", "chronic",
    "ssh", "tmux", "screen", "trap", "coproc", "alias", "expect", "sem", "tsp", "at", "batch",
    *_SHELLS, *_SOURCES,
})
"""Commands that run another command given in their arguments; an allow rule never vouches for them."""
_OPEN_ENDED = frozenset({"xargs", "parallel"})
"""Wrappers that append words from stdin to the command they run."""
_RUNS_NOTHING = frozenset({
    "echo", "printf", "ls", "cat", "grep", "egrep", "fgrep", "rg", "head", "tail", "wc", "touch", "mkdir",
    "rmdir", "rm", "cp", "mv", "ln", "chmod", "test", "[", "cd", "pwd", "true", "false", "diff", "sort", "uniq",
    "cut", "tr", "basename", "dirname", "realpath", "readlink", "stat", "du", "df", "date", "sleep", "which",
})
"""Commands whose arguments are never run as commands (and that cannot read a script from stdin)."""
_FIND_RUNS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_SCRIPT_ENV = frozenset({"BASH_ENV", "ENV"})
_SCRIPTLIKE = re.compile(r"\s|[;&|`]|\$\(")
_SCAN_SPLIT = re.compile(r"[;&|\n()`{}<>]|\$\(")
_MAX_DEPTH = 8


@dataclass(frozen=True)
class SimpleCommand:
    """One command the shell runs: its words after quote removal, leading assignments dropped."""

    words: tuple[str, ...]
    literal: tuple[bool, ...]
    """Per word: the shell passes it exactly as ``words`` shows (no expansion of any kind)."""
    open_end: bool = False
    """More words the text does not show may follow (``xargs``'s command gets words from stdin)."""

    @property
    def text(self) -> str:
        return " ".join(self.words)

    @property
    def name(self) -> str:
        """The program's name, as found on PATH: ``/usr/bin/git`` is ``git``."""
        return self.words[0].rsplit("/", 1)[-1] if self.words else ""

    def tails(self, *, open_end: bool = False) -> list[SimpleCommand]:
        """The command without its first 1, 2, ... words: where a wrapper's inner command may start."""
        return [SimpleCommand(self.words[i:], self.literal[i:], open_end or self.open_end)
                for i in range(1, len(self.words))]


@dataclass(frozen=True)
class ShellCommand:
    text: str
    parsed: bool
    commands: tuple[SimpleCommand, ...] = ()
    hazards: tuple[str, ...] = ()
    """Why an allow rule cannot vouch for the whole command; empty when it can."""
    words: tuple[str, ...] = ()
    """Every word of the command (redirection targets included), for path checks."""
    maybe: tuple[SimpleCommand, ...] = ()
    """Commands that might run, though swarm cannot be sure (see the module docstring)."""
    opaque: tuple[str, ...] = ()
    """Why a script runs that swarm cannot see; empty when it sees everything the shell runs."""

    @property
    def plain(self) -> bool:
        """Parsed, with commands, and nothing an allow rule cannot see."""
        return self.parsed and bool(self.commands) and not self.hazards


@dataclass
class _Reader:
    text: str
    depth: int = 0
    doubtful: int = 0
    """Above 0 while reading text that only might be a script: commands go to ``maybe``, no hazards."""
    commands: list[SimpleCommand] = field(default_factory=list)
    maybe: list[SimpleCommand] = field(default_factory=list)
    hazards: list[str] = field(default_factory=list)
    opaque: list[str] = field(default_factory=list)
    words: list[str] = field(default_factory=list)

    def hazard(self, why: str) -> None:
        if not self.doubtful and why not in self.hazards:
            self.hazards.append(why)

    def unseen(self, why: str) -> None:
        if not self.doubtful and why not in self.opaque:
            self.opaque.append(why)

    def add(self, command: SimpleCommand) -> None:
        (self.maybe if self.doubtful else self.commands).append(command)


def parse_command(text: str) -> ShellCommand:
    """The command as the shell would run it; ``parsed`` is False when bashlex cannot read it."""
    reader = _Reader(text)
    if not _read(text, reader):
        return ShellCommand(text, parsed=False, hazards=("the command could not be parsed",))
    return ShellCommand(text, True, tuple(reader.commands), tuple(reader.hazards), tuple(reader.words),
                        tuple(reader.maybe), tuple(reader.opaque))


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
            _assignment(part, reader)
        elif part.kind == "word":
            words.append(part.word)
            literal.append(_word(part, reader))
        elif part.kind == "redirect":
            _redirect(part, reader)
        else:
            _visit(part, reader)
    for word in words[1:]:
        _script_env(word, reader)
    if words:
        command = SimpleCommand(tuple(words), tuple(literal))
        reader.add(command)
        _unwrap(command, reader)


def _assignment(node: Any, reader: _Reader) -> None:
    """``NAME=value``: what it substitutes runs; a value that reads as a script might (``GIT_PAGER='...'``)."""
    for child in _children(node):
        _visit(child, reader)
    _script_env(node.word, reader)
    value = node.word.partition("=")[2]
    if _SCRIPTLIKE.search(value):
        _doubt(value, reader)


def _script_env(word: str, reader: _Reader) -> None:
    """``BASH_ENV=file`` (also through ``export`` or ``env``): every shell started after it runs the file."""
    name = word.partition("=")[0]
    if "=" in word and name in _SCRIPT_ENV:
        reader.unseen(f"{name} names a script that a shell runs")


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
        heredoc = getattr(node, "heredoc", None)
        if heredoc is not None:
            _doubt(str(getattr(heredoc, "value", "")), reader)
        return
    if kind == "<<<":
        reader.hazard("a here-string")
    if target is None or isinstance(target, int) or target == "-":
        return  # a duplicated or closed descriptor: 2>&1, >&2, >&-
    literal = _word(target, reader)
    if kind == "<<<":
        _doubt(_ansi_c(reader.text[target.pos[0]:target.pos[1]]) or target.word, reader)
    elif not (literal and target.word in _HARMLESS_TARGETS):
        reader.hazard("a redirection to or from a file")


# -- what a command runs besides itself ---------------------------------------------


def _unwrap(command: SimpleCommand, reader: _Reader, *, tails: bool = True) -> None:
    """Add what the command may run: a shell's script, ``eval``'s text, a wrapper's inner command.

    A known wrapper's inner command (every tail of its words, and every
    argument that reads as a script) counts as run; for a command swarm does
    not know, the same only might run (``maybe``). ``tails`` is False for a
    tail itself, whose own tails its parent already added.
    """
    name = command.name
    if name in _SHELLS or name in _SOURCES:
        reader.hazard(f"{name} runs another command")
        _shell(command, reader)
        return
    if name == "eval":
        reader.hazard("eval runs another command")
        if _nested(" ".join(command.words[1:]), reader):
            return
    wrapper = name in WRAPPERS or (name == "find" and bool(_FIND_RUNS.intersection(command.words)))
    if wrapper:
        reader.hazard(f"{name} runs another command")
    elif name in _RUNS_NOTHING or not tails:
        return
    reader.doubtful += not wrapper
    try:
        if tails:
            for tail in command.tails(open_end=name in _OPEN_ENDED):
                reader.add(tail)
                _unwrap(tail, reader, tails=False)
        for arg in command.words[1:]:
            for script in _scripts_in(arg):
                _nested(script, reader)
    finally:
        reader.doubtful -= not wrapper


def _shell(command: SimpleCommand, reader: _Reader) -> None:
    """``bash -c 'script'`` runs the script (parsed); any other shell or ``source`` reads one swarm cannot see."""
    args = command.words[1:]
    flags, i = "", 0
    while i < len(args) and args[i][:1] in ("-", "+") and args[i] not in ("-", "--"):
        if args[i] in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 2
            continue
        flags += args[i][1:] if not args[i].startswith("--") else ""
        i += 1
    i += i < len(args) and args[i] == "--"
    if command.name in _SHELLS and "c" in flags and i < len(args):
        _nested(args[i], reader)
    else:
        reader.unseen(f"{command.name} runs a script from a file or stdin that swarm cannot see")


def _scripts_in(word: str) -> list[str]:
    """Texts in an argument that may be a command string: the word, what follows ``-S``, or an ``=``."""
    if not _SCRIPTLIKE.search(word):
        return []
    found = [word]
    if word.startswith("-") and not word.startswith("--"):
        found.append(word[2:])
    if "=" in word:
        found.append(word.partition("=")[2])  # --split-string=..., alias name='...'
    return found


def _nested(script: str, reader: _Reader) -> bool:
    """Add the commands of a script another command runs; one that cannot be parsed is scanned word by word."""
    if reader.depth >= _MAX_DEPTH:
        reader.unseen("commands nested too deeply to follow")
        return False
    reader.depth += 1
    try:
        if _read(script, reader):
            return True
    finally:
        reader.depth -= 1
    reader.unseen("a script that could not be parsed")
    for words in scan_words(script):
        if words:
            reader.add(SimpleCommand(tuple(words), (True,) * len(words)))
    return False


def _ansi_c(raw: str) -> str | None:
    """The text of a ``$'...'`` word with its escapes decoded (bashlex reads it as a parameter); None for others."""
    if not (raw.startswith("$'") and raw.endswith("'") and len(raw) > 2):
        return None
    try:
        return codecs.decode(raw[2:-1].encode("utf-8", "backslashreplace"), "unicode_escape")
    except (UnicodeDecodeError, ValueError):  # a broken escape: read the text as written
        return raw[2:-1]


def _doubt(text: str, reader: _Reader) -> None:
    """Text that might be a script (a here-document, a here-string, an assignment's value)."""
    reader.doubtful += 1
    try:
        _nested(text, reader)
    finally:
        reader.doubtful -= 1


def scan_words(text: str) -> list[list[str]]:
    """Plain words of every segment between shell operators, for text the parser could not read.

    Quotes, backslashes and ``$`` are dropped before splitting on whitespace
    (``'git push'`` gives ``git`` and ``push``), and every tail of a segment
    is its own entry, so a deny rule compared with the start of each entry
    errs on the side of matching.
    """
    out: list[list[str]] = []
    for segment in _SCAN_SPLIT.split(text):
        words = re.sub(r"[\"'\\$]", "", segment).split()
        out += [words[i:] for i in range(len(words))]
    return out
