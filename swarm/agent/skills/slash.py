"""Skills named in text: ``/name args`` at the start of a prompt, and a definition's ``skills:`` list.

A prompt is a slash command when, after leading whitespace, it starts with
``/<name>`` where name is 1-64 of ``A-Z a-z 0-9 _ -`` followed by whitespace
or the end. So ``/``, ``//x``, ``/usr/bin`` and ``/a.b`` are plain text
(``parse_slash`` returns None) and never draw a note.

    "/a /b rest"      skills (a, b), args "rest": every expanded skill gets the same args
    "/a /zzz rest"    skills (a,), args "/zzz rest", unknown ("/zzz",): expansion stops there
    "/zzz rest"       skills (), args = the prompt unchanged, unknown ("/zzz",): leave it as text
    "/f x" (fork)     skills (f,), args "x": a forked skill is always alone, so
    "/f /a x"         is f with args "/a x", and
    "/a /f x"         is a with args "/f x" (the fork ends the run before it)

A name is known when it names a user-invocable skill; a name that is not
(``user-invocable: false`` included) stops the run and is ``unknown``.

Only a person's own words expand a person-only skill (``disable-model-invocation:
true``): text a model chose (``by_person=False``: a lead model's spawn prompt or
message) stops at such a name, which is ``person_only``; the text stays as it
is, and the model that reads it cannot call the skill either (the Skill tool
refuses it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from swarm.agent.skills.arguments import render_skill
from swarm.agent.skills.catalog import Skill, SkillCatalog

_COMMAND = re.compile(r"/(?P<name>[A-Za-z0-9_-]{1,64})(?=\s|$)")


@dataclass(frozen=True)
class SlashExpansion:
    """The skills a prompt starts with, the arguments they share, and a name-shaped word that named none."""

    skills: tuple[Skill, ...]
    """In order; a forked skill is always alone. Empty: nothing to expand, keep the prompt (``args``) as it is."""
    args: str
    """The text after the expanded commands (stripped); the whole prompt when ``skills`` is empty."""
    unknown: tuple[str, ...]
    """The ``/name`` that stopped expansion without naming a user-invocable skill (at most one), for a note."""
    person_only: tuple[str, ...] = ()
    """The ``/name`` of a person-only skill that stopped expansion of a model's text (at most one), for a note."""

    @property
    def forks(self) -> bool:
        """Expanding runs a subagent (a ``context: fork`` skill): it acts, so it must not run twice."""
        return any(skill.context == "fork" for skill in self.skills)


def parse_slash(prompt: str, catalog: SkillCatalog, *, by_person: bool) -> SlashExpansion | None:
    """The slash commands ``prompt`` starts with (see the module docstring); None when it does not start with one.

    ``by_person``: a person chose these words (their prompt, their own ``swarm send``); False for a model's.
    """
    rest = prompt.lstrip()
    if _COMMAND.match(rest) is None:
        return None
    skills: list[Skill] = []
    unknown: tuple[str, ...] = ()
    person_only: tuple[str, ...] = ()
    while (match := _COMMAND.match(rest)) is not None:
        skill = catalog.get(match["name"])
        if skill is None or not skill.user_invocable:
            unknown = (match[0],)
            break
        if skill.disable_model_invocation and not by_person:
            person_only = (match[0],)
            break
        if skill.context == "fork" and skills:
            break
        skills.append(skill)
        rest = rest[match.end():].lstrip()
        if skill.context == "fork":
            break
    if not skills:
        return SlashExpansion(skills=(), args=prompt, unknown=unknown, person_only=person_only)
    return SlashExpansion(skills=tuple(skills), args=rest.strip(), unknown=unknown, person_only=person_only)


def preload_text(names: Sequence[str], catalog: SkillCatalog, where: str = "") -> tuple[str, list[str]]:
    """A system-prompt section with the named skills' bodies (no arguments), and a warning per unknown name.

    For an agent definition's ``skills:`` list. A name listed twice is loaded once. Warnings read
    ``<where>: skills: <name>: ...`` (``where``: the definition's ``origin``; without it they start
    at ``skills:``). "" when nothing loads.
    """
    prefix = f"{where}: " if where else ""
    sections: list[str] = []
    warnings: list[str] = []
    for name in dict.fromkeys(names):
        skill = catalog.get(name)
        if skill is None:
            known = ", ".join(catalog.names()) or "none"
            warnings.append(f"{prefix}skills: {name}: no such skill (known: {known}); fix the name or add "
                            f".claude/skills/{name}/SKILL.md")
            continue
        sections.append(f"## Skill: {skill.name}\n\n{render_skill(skill, '')}")
    if not sections:
        return "", warnings
    head = "# Preloaded skills\n\nThese skills are already loaded; follow them when they apply."
    return "\n\n".join([head, *sections]), warnings
