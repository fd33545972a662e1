"""How a Bash rule's specifier matches a parsed command: strictly for allow, conservatively for deny and ask.

A specifier is ``x:*`` (a command whose words start with ``x``), ``x*`` (text
starting with ``x``) or ``x`` (exactly that command).

- ``allows``: strict. The simple command is certainly one the rule names:
  its first words are the rule's words, literally.
- ``could_run``: conservative, for deny and ask rules. ``yes`` when a simple
  command the shell runs could be the one the rule names: the program
  matched by name wherever it lives (``/usr/bin/git`` is ``git``), options
  before and between the rule's words skipped (``git -C . --no-pager push``
  is ``git push``; an option defining an alias, ``git -c alias.p=push p``,
  could be anything), a non-literal word taken as anything, and an
  ``xargs`` command as one that may go on. ``maybe`` when only a command
  swarm is unsure of matches (``ShellCommand.maybe``: the later words of an
  unknown command, text that might be a script), when a script runs that
  swarm cannot see (``ShellCommand.opaque``), or when the command cannot be
  parsed and no scanned words match (each scanned run may go on, as an
  ``xargs`` command would). ``no`` otherwise.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Literal

from swarm.agent.permissions.shell_syntax import ShellCommand, SimpleCommand, scan_words

Match = Literal["yes", "maybe", "no"]
_REDEFINING = ("alias.", "autocorrect")
"""Config keys that, given as an option, make a subcommand name mean another (git's aliases, autocorrect)."""


@dataclass(frozen=True)
class Spec:
    """A Bash rule's specifier: ``prefix`` (``x:*``), ``text`` (``x*``) or ``exact``."""

    kind: Literal["prefix", "text", "exact"]
    words: tuple[str, ...]
    text: str

    @classmethod
    def of(cls, spec: str) -> Spec:
        kind: Literal["prefix", "text", "exact"] = "exact"
        if spec.endswith(":*"):
            kind, spec = "prefix", spec[:-2]
        elif spec.endswith("*"):
            kind, spec = "text", spec[:-1]
        try:
            words = tuple(shlex.split(spec))
        except ValueError:
            words = tuple(spec.split())
        return cls(kind, words, spec if kind == "text" else " ".join(words))


def allows_all(spec: str, command: ShellCommand) -> bool:
    rule = Spec.of(spec)
    return command.plain and all(allows(rule, part) for part in command.commands)


def allows(rule: Spec, part: SimpleCommand) -> bool:
    """Strict: the simple command is certainly one the rule names."""
    if rule.kind == "text":
        return all(part.literal) and part.text.startswith(rule.text)
    k = len(rule.words)
    if rule.kind == "exact" and len(part.words) != k:
        return False
    return part.words[:k] == rule.words and all(part.literal[:k])


def could_run(spec: str, command: ShellCommand) -> Match:
    """Conservative: might the command run one the rule names (see the module docstring)?"""
    rule = Spec.of(spec)
    if not command.parsed:
        # what follows a scanned run of words is unknown (``xargs git`` in text bashlex cannot read)
        scanned = (SimpleCommand(tuple(w), (True,) * len(w), open_end=True) for w in scan_words(command.text) if w)
        return "yes" if any(_could_be(rule, part) for part in scanned) else "maybe"
    if any(_could_be(rule, part) for part in command.commands):
        return "yes"
    if command.opaque or any(_could_be(rule, part, named=True) for part in command.maybe):
        return "maybe"
    return "no"


def _base(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _could_be(rule: Spec, part: SimpleCommand, *, named: bool = False) -> bool:
    """Could the simple command be one the rule names? ``named``: only if its program is literally the rule's."""
    if not part.words or not rule.words:
        return bool(part.words) and rule.kind == "text" and not rule.text
    if not part.literal[0]:
        return not named  # could expand to anything, even to several words
    if rule.kind == "text" and _text_could_be(rule, part):
        return True
    if _base(part.words[0]) != _base(rule.words[0]):
        return False
    return _rest_could_be(rule, part)


def _text_could_be(rule: Spec, part: SimpleCommand) -> bool:
    """``x*``: the text starts with ``x``, or could once its non-literal words (or ``xargs``'s) are known.

    (``_rest_could_be`` then also tries the rule's words with options skipped, the last one as a prefix.)
    """
    words = (_base(part.words[0]), *part.words[1:])
    if any(text.startswith(rule.text) for text in (" ".join(words), part.text)):
        return True
    known = 0
    while known < len(words) and part.literal[known]:
        known += 1
    return (known < len(words) or part.open_end) and rule.text.startswith(" ".join(words[:known]))


def _rest_could_be(rule: Spec, part: SimpleCommand) -> bool:
    """The rule's words after the program, each found after skipping options (and their possible arguments)."""
    words, literal = part.words, part.literal
    reach = _after_options(part, 1)
    for index, want in enumerate(rule.words[1:], start=2):
        stem = rule.kind == "text" and index == len(rule.words)  # ``git pu*``: the last word is a prefix
        if reach is None:
            return True
        found: set[int] = set()
        for at in reach:
            if at >= len(words):
                if part.open_end:
                    return True
                continue
            if not literal[at]:
                return True
            if words[at] == want or (stem and words[at].startswith(want)):
                more = _after_options(part, at + 1)
                if more is None:
                    return True
                found |= more
        if not found:
            return False
        reach = found
    if reach is None or rule.kind != "exact" or part.open_end:
        return True
    return any(not any(literal[at:]) for at in reach)  # exact: nothing literal may follow


def _after_options(part: SimpleCommand, start: int) -> set[int] | None:
    """Where the next non-option word may be: ``start``, or past options and what may be their arguments.

    None when an option could redefine what follows (``-c alias.p=push``, ``-c help.autocorrect=1``).
    """
    words, literal = part.words, part.literal
    reach: set[int] = set()
    frontier = [start]
    while frontier:
        at = frontier.pop()
        if at in reach:
            continue
        reach.add(at)
        if at >= len(words) or not literal[at] or not words[at].startswith("-") or words[at] == "-":
            continue
        if any(key in w.casefold() for w in words[at:at + 2] for key in _REDEFINING):
            return None
        frontier.append(at + 1)
        if "=" not in words[at] and words[at] != "--":
            frontier.append(at + 2)
    return reach
