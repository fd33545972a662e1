"""The Skill tool: load a skill's instructions into the conversation, or run a forked skill in a subagent.

Progressive disclosure: the catalog (name and description of every skill the
model may invoke) reaches the model as a ``<system-reminder>`` attachment
(``swarm.agent.agent_listing.SkillListing``), told again when a skill is added
mid-session, so this tool's text is fixed for the process and the tools part
of the request stays cacheable; a skill's body is sent only when it is used.
``catalog`` is what the tool runs from: the session sets it to the catalog the
model was last told of.

- A normal skill: the result is its body with the arguments substituted,
  after a line naming its base directory (bundled scripts and data are found
  relative to it). For the rest of the turn its ``allowed-tools`` run without
  asking (never over a deny rule) and its ``model`` answers.
- A ``context: fork`` skill: its body is NOT added to this conversation. A
  subagent of the skill's ``agent`` definition runs a fresh conversation
  whose only message is the substituted body, and the result is that
  subagent's answer, framed: ``Skill NAME ran in a separate context and
  returned: ...``. It runs through the one subagent lifecycle (``run_child``).
  The skill is active in that subagent, not here: the subagent runs with its
  ``allowed-tools`` granted and its ``model`` (``plan_skill_fork``).

Either way a subagent that uses a skill is switched like the main agent
(``run_child`` gives it grants and a ``TurnModel``). Slash commands are
expanded as the agent they are for (``ctx.turn.running`` set by its session), so a
fork started by one is linked from that agent's transcript like any subagent.
"""

from __future__ import annotations

from collections.abc import Callable

from pydantic import Field

from swarm.agent.skills import (
    Skill,
    SkillCatalog,
    SlashExpansion,
    parse_slash,
    render_skill,
)
from swarm.agent.subagents import LinkedCancel, plan_skill_fork, run_child
from swarm.agent.tool_api.base import Tool
from swarm.agent.tool_api.context import ToolContext, ToolError
from swarm.agent.tool_api.inputs import NoneOmitted, ToolInput


class SkillInput(ToolInput):
    skill: str = Field(description="The name of the skill to use, from the list of available skills.")
    args: str | NoneOmitted = Field(default=None, description="Arguments for the skill, as one string.")


class SkillTool(Tool[SkillInput]):
    name = "Skill"
    description = (
        "Use a skill: a packaged procedure with its own instructions (and sometimes scripts or data files). "
        "When a request matches a skill's description, call this tool with the skill's name BEFORE doing the "
        "work yourself, then follow the instructions it returns. The skills available are listed in a "
        "<system-reminder> in the conversation (updated when they change); only use skills listed there."
    )
    input_model = SkillInput
    read_only = True
    """Loading instructions changes nothing; what the skill then asks for goes through the gate."""

    def __init__(self, catalog: SkillCatalog) -> None:
        self.catalog = catalog

    def run(self, args: SkillInput, ctx: ToolContext) -> str:
        skill = self.catalog.get(args.skill.removeprefix("/"))
        if skill is None or skill.disable_model_invocation:
            known = ", ".join(s.name for s in self.catalog.model_invocable()) or "(none)"
            raise ToolError(f"unknown skill {args.skill!r}; available: {known}")
        return use_skill(skill, args.args or "", ctx)


def use_skill(skill: Skill, args: str, ctx: ToolContext) -> str:
    """What using ``skill`` gives the agent: its body (and its grants for the turn), or a forked run's answer."""
    if skill.context == "fork":
        return f"Skill {skill.name} ran in a separate context and returned: {run_forked_skill(skill, args, ctx)}"
    ctx.turn.granted_rules.extend(skill.allowed_tools)
    if skill.model and ctx.services.models is not None:
        ctx.services.models.use(skill.model)
    return render_skill(skill, args)


def run_forked_skill(skill: Skill, args: str, ctx: ToolContext) -> str:
    """Run a ``context: fork`` skill in a subagent; its final answer, as the subagent gave it."""
    host = ctx.services.agents
    if host is None:
        raise ToolError(f"skill {skill.name} runs in a subagent, and subagents are not available here")
    plan = plan_skill_fork(host, ctx, skill, render_skill(skill, args))
    outcome = run_child(host, ctx, plan, LinkedCancel(ctx.turn.cancel))
    if not outcome.run.ok and not outcome.run.text:
        raise ToolError(f"skill {skill.name} stopped before answering ({outcome.run.stop_reason})")
    return outcome.run.text


def expand_slash(prompt: str, catalog: SkillCatalog, ctx: ToolContext,
                 note: Callable[[str], None] = lambda _: None, *, by_person: bool,
                 parsed: SlashExpansion | None = None) -> str:
    """A prompt that starts with ``/skill`` commands, expanded before the model sees it (slash commands).

    Each skill's body (with the shared arguments and its base directory) in
    order, or for a ``context: fork`` skill its subagent's framed answer. A
    ``/name`` that is no user-invocable skill stays text, and ``note`` hears of it;
    so does a person-only skill in words a model chose (``by_person`` False).
    ``parsed``: ``parse_slash(prompt, catalog, by_person=by_person)``, when the caller has it already.
    """
    expansion = parsed if parsed is not None else parse_slash(prompt, catalog, by_person=by_person)
    if expansion is None:
        return prompt
    for name in expansion.unknown:
        note(f"{name} is not a skill; sent as text (`swarm skills` lists them)")
    for name in expansion.person_only:
        note(f"{name} runs only when a person types it, and a model wrote this; sent as text")
    if not expansion.skills:
        return prompt
    return "\n\n".join(use_skill(skill, expansion.args, ctx) for skill in expansion.skills)
