"""Skills: procedures a project teaches its agents, loaded only when used (Claude Code's SKILL.md format).

- ``catalog``: where skills are found, their frontmatter, precedence, and the model's catalog text.
- ``arguments``: ``$ARGUMENTS``, ``$N``, ``${CLAUDE_SKILL_DIR}`` and the rendered body.
- ``slash``: ``/name args`` at the start of a prompt, and a definition's ``skills:`` preload.
"""

from __future__ import annotations

from swarm.agent.skills.arguments import render_skill, split_arguments, substitute
from swarm.agent.skills.catalog import (
    Skill,
    SkillCatalog,
    SkillSource,
    catalog_text,
    load_skills,
    parse_skill_file,
)
from swarm.agent.skills.slash import SlashExpansion, parse_slash, preload_text

__all__ = [
    "Skill", "SkillCatalog", "SkillSource", "SlashExpansion", "catalog_text", "load_skills", "parse_skill_file",
    "parse_slash", "preload_text", "render_skill", "split_arguments", "substitute",
]
