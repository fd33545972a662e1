"""Finding skills: ``SKILL.md`` folders and legacy command files, their frontmatter, and which one wins a name.

Where skills come from (Claude Code's layout, so existing folders work unchanged)::

    user      <claude_config_dir>/skills/<name>/SKILL.md        <claude_config_dir>/commands/<name>.md
    project   .claude/skills/<name>/SKILL.md, .swarm/skills/<name>/SKILL.md, .claude/commands/<name>.md
              in every directory from the repository root (the filesystem root outside one) down to the cwd;
              only in a trusted folder (``swarm.agent.trust``), never from another user's directory

Precedence by name, later winning: every legacy command (user, then project
from the farthest directory to the nearest), then every ``SKILL.md`` in the
same order (in one directory ``.swarm`` over ``.claude``). So a ``SKILL.md``
beats a command of the same name wherever either lives (Claude Code's rule),
and otherwise project beats user and nearer beats farther.

Frontmatter is optional (a file that does not start with ``---`` is all
body). Keys, in Claude Code's spelling: ``name`` (default: the folder name, or
the command file's name without ``.md``), ``description`` (default: the
body's first paragraph), ``argument-hint``, ``allowed-tools`` (a YAML list, or
a string separated by commas or spaces outside parentheses: ``Read Grep
Bash(git *)``), ``model``, ``context`` (``fork``; ``inherit`` means unset),
``agent``, ``disable-model-invocation``, ``user-invocable``. Unknown keys are
kept in ``extra`` and otherwise ignored. A file that cannot be loaded is one
warning, ``<path>: <field>: <what is wrong>; <what to do>``; the others load.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from swarm.agent.config_files import (
    ConfigFileError,
    claude_config_dir,
    describe_field_error,
    directories_down_to,
    read_markdown,
    split_frontmatter,
    split_names,
)
from swarm.agent.trust import is_trusted
from swarm.core.names import validate_name
from swarm.core.text import flat
from swarm.errors import InvalidNameError

log = logging.getLogger(__name__)

SkillSource = Literal["user", "project", "command"]
SKILL_FILE = "SKILL.md"
SKILL_DIRS = (Path(".claude") / "skills", Path(".swarm") / "skills")
"""Where a directory keeps skill folders, in the order they are read (later wins on a clash)."""
COMMAND_DIR = Path(".claude") / "commands"
"""Where a project keeps legacy command files (the user's are ``<claude_config_dir>/commands``)."""


class Skill(BaseModel):
    """One skill: its instructions (``body``) and how it may be used. Unknown frontmatter is in ``extra``."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    body: str
    """The Markdown after the frontmatter."""
    directory: Path
    """The skill's base directory: the folder holding SKILL.md (for a legacy command, the folder holding the .md)."""
    path: Path
    """The SKILL.md or command file."""
    argument_hint: str | None = None
    allowed_tools: list[str] = []
    """Permission rules allowed without asking while the skill is active, e.g. ``Read``, ``Bash(git *)``."""
    model: str | None = None
    context: Literal["fork"] | None = None
    agent: str | None = None
    """The definition a forked skill runs with; None means general-purpose."""
    disable_model_invocation: bool = False
    user_invocable: bool = True
    source: SkillSource = "project"
    extra: dict[str, Any] = {}


def _sorted(skills: Iterator[Skill] | list[Skill]) -> list[Skill]:
    return sorted(skills, key=lambda skill: (skill.name.lower(), skill.name))


@dataclass(frozen=True)
class SkillCatalog:
    """The active skills by name, and one line per file that could not be loaded as written."""

    skills: dict[str, Skill]
    warnings: list[str]

    def get(self, name: str) -> Skill | None:
        return self.skills.get(name)

    def names(self) -> list[str]:
        return [skill.name for skill in _sorted(list(self.skills.values()))]

    def model_invocable(self) -> list[Skill]:
        """The skills the model may invoke (and sees in the catalog), sorted by name."""
        return _sorted([skill for skill in self.skills.values() if not skill.disable_model_invocation])

    def user_invocable(self) -> list[Skill]:
        """The skills a prompt may invoke as ``/name``, sorted by name."""
        return _sorted([skill for skill in self.skills.values() if skill.user_invocable])


# -- frontmatter -----------------------------------------------------------------------


def _hint_text(value: Any) -> Any:
    """``argument-hint: [file]`` is a YAML list; keep what the author wrote: ``[file]``."""
    if isinstance(value, list):
        return "[" + ", ".join(str(item) for item in value) + "]"
    return value


def _tools_list(value: Any) -> Any:
    return split_names(value, spaces=True) if isinstance(value, str) else value


class _Fields(BaseModel):
    """A skill's frontmatter, with Claude Code's key names."""

    model_config = ConfigDict(extra="allow", strict=True, populate_by_name=True, frozen=True)

    name: str | None = None
    description: str | None = None
    argument_hint: str | None = Field(None, alias="argument-hint")
    allowed_tools: list[str] | None = Field(None, alias="allowed-tools")
    model: str | None = None
    context: Literal["fork", "inherit"] | None = None
    agent: str | None = None
    disable_model_invocation: bool = Field(False, alias="disable-model-invocation")
    user_invocable: bool = Field(True, alias="user-invocable")

    _hint = field_validator("argument_hint", mode="before")(_hint_text)
    _tools = field_validator("allowed_tools", mode="before")(_tools_list)

    @field_validator("name")
    @classmethod
    def _path_safe(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                validate_name(value, "skill name")
            except InvalidNameError as exc:
                raise ValueError(f"{value!r} cannot be a skill name") from exc
        return value


_HINTS = {
    "name": "use 1-64 of A-Z a-z 0-9 _ - (or leave it out to use the folder name)",
    "description": "write one line saying what the skill does and when to use it",
    "argument-hint": "write the expected arguments as text, e.g. \"[file] [format]\"",
    "allowed-tools": "use a YAML list or a string of permission rules, e.g. Read Grep Bash(git *)",
    "model": "use sonnet, opus, haiku, fable, inherit or a model id",
    "context": "use fork (run in a subagent) or leave it out",
    "agent": "use the name of an agent definition, e.g. Explore",
    "disable-model-invocation": "use true or false",
    "user-invocable": "use true or false",
}
_ALIASES = {name: info.alias or name for name, info in _Fields.model_fields.items()}


def _first_paragraph(body: str) -> str:
    """The body's first paragraph on one line (a heading's ``#`` marks dropped): a missing description."""
    lines: list[str] = []
    for line in body.strip().splitlines():
        if not line.strip():
            break
        lines.append(line.strip().lstrip("#").strip())
    return flat(" ".join(lines), None)


def parse_skill_file(path: Path, *, default_name: str, source: SkillSource) -> Skill:
    """The skill in ``path`` (a SKILL.md or a command file); ConfigFileError (``<field>: ...``) if it cannot load."""
    data, body = split_frontmatter(read_markdown(path), required=False)
    try:
        fields = _Fields.model_validate(data)
    except ValidationError as exc:
        raise ConfigFileError(describe_field_error(exc, aliases=_ALIASES, hints=_HINTS)) from exc
    try:
        name = fields.name or validate_name(default_name, "skill name")
    except InvalidNameError as exc:
        where = "folder" if path.name == SKILL_FILE else "file"
        raise ConfigFileError(f"name: {exc}; rename the {where} or set name in the frontmatter") from exc
    description = fields.description if fields.description is not None else _first_paragraph(body)
    return Skill(
        name=name, description=description, body=body, directory=path.parent.absolute(), path=path.absolute(),
        argument_hint=fields.argument_hint, allowed_tools=fields.allowed_tools or [], model=fields.model,
        context="fork" if fields.context == "fork" else None, agent=fields.agent,
        disable_model_invocation=fields.disable_model_invocation, user_invocable=fields.user_invocable,
        source=source, extra=dict(fields.model_extra or {}),
    )


# -- files -------------------------------------------------------------------------------


def _listing(directory: Path, pattern: str, warnings: list[str]) -> list[Path]:
    """The visible entries of ``directory`` matching ``pattern``, sorted; a warning if it cannot be listed."""
    try:
        return sorted(p for p in directory.glob(pattern) if not p.name.startswith("."))
    except OSError as exc:
        warnings.append(f"{directory}: directory: cannot list it ({exc.strerror or exc}); check its mode")
        return []


def _load(path: Path, default_name: str, source: SkillSource, warnings: list[str]) -> Skill | None:
    try:
        return parse_skill_file(path, default_name=default_name, source=source)
    except ConfigFileError as exc:
        warnings.append(f"{path}: {exc}")
        return None


def _skills_in(directory: Path, source: SkillSource, warnings: list[str]) -> Iterator[Skill]:
    """Every ``<name>/SKILL.md`` under ``directory`` that loads (folders without one are not skills)."""
    for folder in _listing(directory, "*", warnings):
        if (folder / SKILL_FILE).is_file():
            skill = _load(folder / SKILL_FILE, folder.name, source, warnings)
            if skill is not None:
                yield skill


def _commands_in(directory: Path, warnings: list[str]) -> Iterator[Skill]:
    """Every legacy ``<name>.md`` command directly in ``directory`` that loads."""
    for path in _listing(directory, "*.md", warnings):
        if path.is_file():
            skill = _load(path, path.stem, "command", warnings)
            if skill is not None:
                yield skill


def _project_dirs(cwd: Path, subdirs: tuple[Path, ...], user_dirs: set[Path]) -> list[Path]:
    """Project directories named ``subdirs``, farthest first; never one of the user's own directories."""
    found = []
    for directory in directories_down_to(cwd):
        for sub in subdirs:
            candidate = directory / sub
            if candidate.is_dir() and candidate.resolve() not in user_dirs:
                found.append(candidate)
    return found


def _layers(cwd: Path, env: Mapping[str, str], warnings: list[str]) -> Iterator[Skill]:
    """Every loadable skill in precedence order, lowest first (see the module docstring)."""
    config = claude_config_dir(env)
    user_skills, user_commands = config / "skills", config / "commands"
    user_dirs = {user_skills.resolve(), user_commands.resolve()}
    commands, skills = _project_dirs(cwd, (COMMAND_DIR,), user_dirs), _project_dirs(cwd, SKILL_DIRS, user_dirs)
    if (commands or skills) and not is_trusted(cwd, env):  # workspace trust: the project's skills wait for it
        log.debug("untrusted folder: project skills ignored", extra={"cwd": str(cwd)})
        commands, skills = [], []
    if user_commands.is_dir():
        yield from _commands_in(user_commands, warnings)
    for directory in commands:
        yield from _commands_in(directory, warnings)
    if user_skills.is_dir():
        yield from _skills_in(user_skills, "user", warnings)
    for directory in skills:
        yield from _skills_in(directory, "project", warnings)


def load_skills(cwd: Path, *, env: Mapping[str, str]) -> SkillCatalog:
    """The active skills for an agent in ``cwd``; files that cannot be loaded become ``warnings``."""
    warnings: list[str] = []
    active: dict[str, Skill] = {}
    for skill in _layers(cwd, env, warnings):
        replaced = active.get(skill.name)
        if replaced is not None:
            log.debug("skill replaced", extra={"skill": skill.name, "path": str(skill.path),
                                                "replaced": str(replaced.path)})
        active[skill.name] = skill
    for warning in warnings:
        log.debug("skill warning", extra={"warning": warning})
    return SkillCatalog(active, warnings)


def catalog_text(catalog: SkillCatalog) -> str:
    """What the model sees of the skills it may invoke: ``- <name>: <description>`` lines, sorted; "" for none."""
    lines = []
    for skill in catalog.model_invocable():
        description = flat(skill.description, None)
        hint = f" (arguments: {flat(skill.argument_hint, None)})" if skill.argument_hint else ""
        lines.append(f"- {skill.name}: {description}{hint}" if description else f"- {skill.name}{hint}")
    return "\n".join(lines)
