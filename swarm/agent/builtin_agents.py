"""The built-in agent definitions: the types every swarm agent may start without a definition file.

    general-purpose   every tool; the Agent tool's default type
    Explore, Plan     read-only (Read, Glob, Grep, read-only Bash), no CLAUDE.md; one-shot (``ONE_SHOT_TYPES``)
    Verification      adversarial tester: read-only, model inherit, always in the background, red, its rule
                      repeated after every tool result (``critical_system_reminder``)
    swarm-guide       answers questions about swarm from its README and the person's own configuration
                      (the only built-in whose prompt is built at start: ``swarm.agent.guide``)

In coordinator mode (``swarm.agent.coordinator``) the one ``worker`` type
replaces them all. Files and ``--agents`` may override any of them by name
(``swarm.agent.definitions``).
"""

from __future__ import annotations

from collections.abc import Mapping

from swarm.agent import prompts
from swarm.agent.coordinator import coordinator_mode, worker_definition
from swarm.agent.definition_model import GENERAL_PURPOSE_TYPE, AgentDefinition
from swarm.agent.verification import VERIFICATION, VERIFICATION_DESCRIPTION, VERIFICATION_REMINDER, VERIFICATION_TYPE

GUIDE_TYPE = "swarm-guide"
ONE_SHOT_TYPES = frozenset({"Explore", "Plan"})
"""Built-ins whose answer goes back without its agentId and usage trailer: nobody continues or audits them,
and they run most often (seed 000, ``ONE_SHOT_BUILTIN_AGENT_TYPES``)."""
READERS = ["Read", "Glob", "Grep", "Bash"]
NEVER_WRITE = ["Agent", "Write", "Edit", "ExitPlanMode"]

GUIDE = """You are swarm's guide: you answer questions about swarm, the runtime this session runs in (teams of
AI coding agents as OS processes; agent definitions, skills, subagents, teams, permissions, settings).
Answer from swarm's README (below, or at the path given) and from the person's configuration as it is now
(below): say what is already set up, then exactly what to add or change and where (the file path, the
frontmatter or JSON keys, the command to run). Quote the README's own examples where they fit. You only
read: you never write or edit files; give the person the text to paste instead. If the README does not
cover something, say so rather than guess."""


def builtin_agents(env: Mapping[str, str] | None = None) -> list[AgentDefinition]:
    """The built-ins (see the module docstring); in coordinator mode (``env``) only ``worker``."""
    if env is not None and coordinator_mode(env):
        return [worker_definition()]
    return [
        AgentDefinition(
            name=GENERAL_PURPOSE_TYPE, prompt=prompts.GENERAL_PURPOSE,
            description="General-purpose agent for researching complex questions, searching for code and "
                        "carrying out multi-step tasks. Use it when a search may take several tries, or for "
                        "a self-contained piece of work whose details you do not need in your own context."),
        AgentDefinition(
            name="Explore", prompt=prompts.EXPLORE, tools=READERS, disallowed_tools=NEVER_WRITE,
            omit_claude_md=True, read_only=True,
            description="Fast read-only agent for exploring a codebase: find files by pattern, search code "
                        "for keywords, answer questions about how the code works. Say how thorough to be: "
                        "quick, medium or very thorough."),
        AgentDefinition(
            name="Plan", prompt=prompts.PLAN, tools=READERS, disallowed_tools=NEVER_WRITE,
            omit_claude_md=True, read_only=True,
            description="Read-only software architect: explores the code and returns a step-by-step "
                        "implementation plan with the critical files and trade-offs. Use it to design a "
                        "change before making it."),
        AgentDefinition(
            name=VERIFICATION_TYPE, prompt=VERIFICATION, tools=READERS, disallowed_tools=NEVER_WRITE,
            model="inherit", background=True, color="red", read_only=True,
            critical_system_reminder=VERIFICATION_REMINDER, description=VERIFICATION_DESCRIPTION),
        AgentDefinition(
            name=GUIDE_TYPE, prompt=GUIDE, tools=["Read", "Glob", "Grep"], disallowed_tools=NEVER_WRITE,
            model="haiku", permission_mode="dontAsk", color="green", read_only=True, omit_claude_md=True,
            description="Answers questions about swarm itself: how to set up agent definitions, skills, "
                        "teams, permissions, hooks, MCP servers and settings, knowing what this project "
                        "already has configured. Use it when the person asks how to do something with swarm."),
    ]
