"""A skill's body with its arguments filled in: what the model reads when a skill is invoked.

What counts as a reference (one left-to-right pass, so text that an argument
brings in is never substituted again):

    ${CLAUDE_SKILL_DIR}   the skill's base directory
    $ARGUMENTS[N]         the argument at 0-based position N (N: one or more digits)
    $ARGUMENTS            the whole argument string as given, when not followed by a letter,
                          digit or _ (``$ARGUMENTS_LIST`` is text; ``$ARGUMENTS.`` is a reference)
    $N                    the same as $ARGUMENTS[N]: ``$`` and all the digits that follow, when
                          not followed by a letter or _ (``$10`` is position 10, never ``$1``
                          then ``0``; ``$1st`` is text)

Positions come from splitting the arguments like a shell (quotes group
words and are removed: ``a "b c"`` is ``a``, ``b c``); an unbalanced quote
falls back to splitting on whitespace. A position past the end is "". There
is no escape: ``$$1`` is ``$`` followed by a reference.

A body with no argument reference (``${CLAUDE_SKILL_DIR}`` does not count)
gets ``\\n\\nARGUMENTS: <args>`` appended when the arguments are not blank, so
arguments are never lost (Claude Code's rule).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from swarm.agent.skills.catalog import Skill

_REFERENCE = re.compile(
    r"\$\{CLAUDE_SKILL_DIR\}"
    r"|\$ARGUMENTS\[(?P<indexed>\d+)\]"
    r"|\$ARGUMENTS(?![\w])"
    r"|\$(?P<short>\d+)(?![\w])"
)
_SKILL_DIR = "${CLAUDE_SKILL_DIR}"


def split_arguments(args: str) -> list[str]:
    """The positional arguments: shell-like words, or whitespace-separated ones if the quotes do not balance."""
    try:
        return shlex.split(args)
    except ValueError:
        return args.split()


def substitute(body: str, args: str, skill_dir: Path) -> str:
    """``body`` with its references replaced (see the module docstring) and, if it has none, the arguments appended."""
    words = split_arguments(args)
    referenced = False

    def replace(match: re.Match[str]) -> str:
        nonlocal referenced
        if match.group(0) == _SKILL_DIR:
            return str(skill_dir)
        referenced = True
        index = match.group("indexed") or match.group("short")
        if index is None:
            return args
        position = int(index)
        return words[position] if position < len(words) else ""

    text = _REFERENCE.sub(replace, body)
    if not referenced and args.strip():
        text += f"\n\nARGUMENTS: {args}"
    return text


def render_skill(skill: Skill, args: str) -> str:
    """What an invoked skill gives the model: its base directory line, then its substituted body."""
    directory = skill.directory.absolute()
    return f"Base directory for this skill: {directory}\n\n" + substitute(skill.body, args, directory)
