"""Claude Code's configuration files: where they are, and how their Markdown with YAML frontmatter is read.

One owner for what agent definitions (``swarm.agent.definitions``), skills
(``swarm.agent.skills``), CLAUDE.md instructions (``swarm.agent.instructions``),
agent memory (``swarm.agent.memory``) and workspace trust
(``swarm.agent.trust``) all need: the user's Claude directory and Claude
Code's global config file, the project's root and the directories down to
the cwd, and the frontmatter reader whose errors say which field is wrong
and what to do.

The walk down to the cwd never includes a directory the current user does
not own, nor anything above one: another local user's directory (``/tmp``
and whatever they planted in it) is never read as project configuration.

A repository's files are untrusted input, so reading them is bounded: a file
larger than ``FILE_LIMIT`` is not read whole, frontmatter longer than
``FRONTMATTER_LIMIT`` is not parsed, YAML aliases (``*name``, the
billion-laughs bomb) are refused before anything expands them, and nesting
deeper than ``YAML_DEPTH`` is refused before the parser recurses into it.
Each is a ``ConfigFileError``: one warning line for that file, the rest load.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from swarm.backends.git import git
from swarm.core.fileio import read_regular
from swarm.errors import BackendError


class ConfigFileError(ValueError):
    """A definition or skill file that cannot be loaded; the message is ``<field>: <problem>; <what to do>``."""


FILE_LIMIT = 256 * 1024
"""Bytes a definition or skill file may have (Claude Code's are a few KiB)."""
FRONTMATTER_LIMIT = 32 * 1024
"""Bytes of YAML between the ``---`` lines."""
YAML_DEPTH = 32
"""Levels of nested mappings and lists in the frontmatter."""


def split_frontmatter(text: str, *, required: bool = True) -> tuple[dict[str, Any], str]:
    """The YAML frontmatter (a mapping) and the body of a Markdown file; ConfigFileError if malformed.

    Not ``required``: a file that does not start with ``---`` is all body, with no fields.
    """
    lines = text.lstrip("\ufeff").splitlines(keepends=True)
    if not required and (not lines or lines[0].strip() != "---"):
        return {}, "".join(lines).strip("\n")
    if not lines or lines[0].strip() != "---":
        raise ConfigFileError("frontmatter: missing; start the file with a --- line, the YAML fields "
                                  "(at least description), and another --- line")
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise ConfigFileError("frontmatter: not closed; end the YAML fields with a --- line")
    yaml_text = "".join(lines[1:end])
    if len(yaml_text.encode()) > FRONTMATTER_LIMIT:
        raise ConfigFileError(f"frontmatter: more than {FRONTMATTER_LIMIT // 1024} KiB of YAML; keep the fields "
                              "short and put long text in the body below the closing --- line")
    import yaml  # here: only a definition or skill file with frontmatter needs the YAML parser

    try:
        data = _load_bounded_yaml(yaml_text)
    except _Refused as exc:
        raise ConfigFileError(f"frontmatter: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "cannot be parsed"
        raise ConfigFileError(f"frontmatter: invalid YAML{where} ({problem}); fix the YAML between "
                                  "the --- lines (quote values that contain ': ')") from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigFileError(f"frontmatter: expected key: value fields, got a {type(data).__name__}; "
                                  "write one field per line, e.g. description: ...")
    return {str(key): value for key, value in data.items()}, "".join(lines[end + 1:]).strip("\n")


class _Refused(Exception):
    """YAML the bounded loader will not build: the message is ``<problem> at line N; <what to do>``."""


def _load_bounded_yaml(text: str) -> Any:
    """``yaml.safe_load`` of frontmatter ``text``, refusing aliases and nesting deeper than ``YAML_DEPTH`` as the
    parse reaches them (``_Refused``), so neither a bomb nor a deep nest costs more than reading ``text``."""
    import yaml

    class Loader(yaml.SafeLoader):
        depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise _Refused(f"YAML aliases (*{event.anchor}) are not allowed (line "
                               f"{event.start_mark.line + 2}); write the value out where it is used")
            if self.check_event(yaml.SequenceStartEvent, yaml.MappingStartEvent):
                self.depth += 1
                if self.depth > YAML_DEPTH:
                    line = self.peek_event().start_mark.line + 2
                    raise _Refused(f"nested deeper than {YAML_DEPTH} levels at line {line}; flatten the value")
                try:
                    return super().compose_node(parent, index)
                finally:
                    self.depth -= 1
            return super().compose_node(parent, index)

    loader = Loader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def read_markdown(path: Path) -> str:
    """The text of the regular UTF-8 file ``path``; ConfigFileError (``file: ...``) if it cannot be read or is
    larger than ``FILE_LIMIT`` (no more than that is read)."""
    try:
        read = read_regular(path, limit=FILE_LIMIT)
    except OSError as exc:
        raise ConfigFileError(f"file: cannot read it ({exc.strerror or exc}); check that it is a "
                                  "readable regular file") from exc
    if read is None:
        raise ConfigFileError("file: it disappeared while loading; nothing to do")
    if len(read[0]) > FILE_LIMIT:
        raise ConfigFileError(f"file: larger than {FILE_LIMIT // 1024} KiB; a definition or skill is a few "
                              "KiB: shorten it or move reference material to files it names")
    try:
        return read[0].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigFileError("file: not UTF-8 text; save it as UTF-8") from exc


def describe_field_error(exc: ValidationError, *, aliases: Mapping[str, str], hints: Mapping[str, str]) -> str:
    """``<field>: <what is wrong>; <what to do>`` for the first error, in the file's own key names.

    ``aliases`` maps a model field to the file's key; ``hints`` maps a file key to what to do.
    """
    error = exc.errors()[0]
    key = str(error["loc"][0]) if error["loc"] else "frontmatter"
    key = aliases.get(key, key)
    if error["type"] == "missing":
        return f"{key}: missing; {hints.get(key, 'add it')}"
    message = str(error["msg"]).removeprefix("Value error, ")
    got = error.get("input")
    shown = error["type"] != "value_error" and not isinstance(got, dict) and len(repr(got)) <= 60
    got_text = f" (got {got!r})" if shown else ""
    return f"{key}: {message[:1].lower()}{message[1:]}{got_text}; {hints.get(key, 'fix or remove it')}"


def claude_config_dir(env: Mapping[str, str]) -> Path:
    """The user-level Claude directory: ``$CLAUDE_CONFIG_DIR`` if set, else ``~/.claude`` (the one resolver)."""
    configured = env.get("CLAUDE_CONFIG_DIR", "").strip()
    if configured:
        return Path(configured).expanduser()
    home = env.get("HOME", "").strip()
    return (Path(home) if home else Path.home()) / ".claude"


def claude_json_path(env: Mapping[str, str]) -> Path:
    """Claude Code's global config file: ``$CLAUDE_CONFIG_DIR/.claude.json`` if set, else ``~/.claude.json``."""
    configured = env.get("CLAUDE_CONFIG_DIR", "").strip()
    if configured:
        return Path(configured).expanduser() / ".claude.json"
    home = env.get("HOME", "").strip()
    return (Path(home) if home else Path.home()) / ".claude.json"


def owned_by_user(directory: Path) -> bool:
    """True if the current user owns ``directory`` (False if it cannot be examined)."""
    try:
        return directory.stat().st_uid == os.geteuid()
    except OSError:
        return False


def repository_root(cwd: Path) -> Path | None:
    """The top of the git working tree holding ``cwd`` (a linked worktree's own top); None outside one."""
    try:
        top = git(cwd, "rev-parse", "--show-toplevel").strip()
    except BackendError:  # not a repository, or no git installed: both mean "no repository"
        return None
    return Path(top).resolve() if top else None


def project_root(cwd: Path) -> Path:
    """The project an agent in ``cwd`` works on: its repository's top, or ``cwd`` itself outside one."""
    return repository_root(cwd) or cwd.resolve()


def directories_down_to(cwd: Path) -> list[Path]:
    """Every directory from the repository root (the filesystem root outside one) down to ``cwd``, in order.

    Only the directories the current user owns, up from ``cwd`` to the first one it does not: none at
    all when ``cwd`` itself is another user's.
    """
    here = cwd.resolve()
    top = repository_root(here) or Path(here.anchor)
    chain = [here, *here.parents]
    chain = chain[: chain.index(top) + 1] if top in chain else [here]  # top not above cwd: should not happen
    return list(reversed(list(itertools.takewhile(owned_by_user, chain))))


def split_names(text: str, *, spaces: bool = False) -> list[str]:
    """Split on commas outside parentheses, so ``Agent(Explore, Plan), Read`` is two entries.

    ``spaces``: whitespace outside parentheses separates too (``Read Grep Bash(git *)``, skills' form).
    """
    parts, depth, current = [], 0, ""
    for char in text:
        depth += (char == "(") - (char == ")")
        if depth == 0 and (char == "," or (spaces and char.isspace())):
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [part.strip() for part in parts if part.strip()]
