"""The Bash file commands acceptEdits runs without asking: ``mkdir``, ``touch``, ``cp``, ``mv``.

A command qualifies only when swarm knows what every word is (``paths_of``):
flags that name no path are skipped (``-p``, ``-r``, ``-f``, ``--parents``
...), ``-t DIR`` / ``-tDIR`` / ``--target-directory[=]DIR`` name a path
that is checked like the others, and after ``--`` every word is a path. Any
other option — one that names a file or a suffix (``--backup``, ``-S``,
``--reference=FILE``, ``-m MODE``), an abbreviated long option, one swarm
does not know — makes the command ask. The policy then checks that every
path is inside the agent's roots.
"""

from __future__ import annotations

from swarm.agent.permissions.shell_syntax import SimpleCommand

_OPTIONS: dict[str, tuple[str, frozenset[str]]] = {
    "mkdir": ("pv", frozenset({"--parents", "--verbose"})),
    "touch": ("achm", frozenset({"--no-create", "--no-dereference"})),
    "cp": ("adfilnprsuvxPRT", frozenset({
        "--archive", "--force", "--interactive", "--link", "--no-clobber", "--preserve", "--recursive",
        "--symbolic-link", "--update", "--verbose", "--one-file-system", "--no-dereference", "--parents",
        "--no-target-directory", "--target-directory"})),
    "mv": ("finuvT", frozenset({
        "--force", "--interactive", "--no-clobber", "--update", "--verbose", "--no-target-directory",
        "--target-directory"})),
}
"""Per program: its short flags and long options that take no argument; ``t``/``--target-directory`` take a directory."""
FILE_COMMANDS = tuple(_OPTIONS)


def paths_of(command: SimpleCommand) -> list[str] | None:
    """The paths a file command writes or reads; None when it is not one, or has a word swarm cannot place."""
    if command.name != command.words[0] or command.name not in _OPTIONS or not all(command.literal):
        return None
    short, long = _OPTIONS[command.name]
    paths: list[str] = []
    words = list(command.words[1:])
    while words:
        word = words.pop(0)
        if word == "--":
            return paths + words
        if not word.startswith("-") or word == "-":
            paths.append(word)
            continue
        name, eq, value = word.partition("=")
        if name == "--target-directory" and name in long:
            if not eq and not words:
                return None
            paths.append(value if eq else words.pop(0))
        elif word.startswith("--"):
            if eq or name not in long:
                return None
        elif not _short_flags(word[1:], short, words, paths):
            return None
    return paths


def _short_flags(cluster: str, short: str, words: list[str], paths: list[str]) -> bool:
    """Read ``-abc`` (``-t DIR`` / ``-tDIR`` take the directory); False for a flag swarm does not know."""
    for i, flag in enumerate(cluster):
        if flag == "t" and "T" in short:  # cp and mv: the target directory
            rest = cluster[i + 1:]
            if not rest and not words:
                return False
            paths.append(rest or words.pop(0))
            return True
        if flag not in short:
            return False
    return True
