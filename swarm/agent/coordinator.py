"""Coordinator mode: the main agent only orchestrates workers (seed 002 §10.1, seed 000 "Worker Agent").

``swarm run --coordinator``, or ``CLAUDE_CODE_COORDINATOR_MODE=1`` in the
environment (Claude Code's switch), makes the main agent an orchestrator:

- its tools are only ``COORDINATOR_TOOLS`` (Agent, SendMessage, TaskStop),
  its system prompt ``COORDINATOR_PROMPT`` (``swarm.agent.assembly``);
- the built-in agent types are replaced by one, ``worker``: every tool a
  background agent may hold, never Agent (gate 1 of
  ``swarm.agent.toolpool``), always in the background
  (``swarm.agent.builtin_agents``);
- no forks (``swarm.agent.subagents.forks_enabled``);
- SendMessage to a worker that finished resumes it with the message
  (``swarm.agent.subagents.message_child``).
"""

from __future__ import annotations

from collections.abc import Mapping

from swarm.agent.definition_model import AgentDefinition

COORDINATOR_ENV = "CLAUDE_CODE_COORDINATOR_MODE"
WORKER_TYPE = "worker"
COORDINATOR_TOOLS = ("Agent", "SendMessage", "TaskStop")
"""The coordinator's whole tool set (in the order of the full tool list)."""


def coordinator_mode(env: Mapping[str, str]) -> bool:
    """Is this process in coordinator mode (``CLAUDE_CODE_COORDINATOR_MODE`` set to a true value)?"""
    return env.get(COORDINATOR_ENV, "").strip().lower() in ("1", "true", "yes", "on")


COORDINATOR_PROMPT = """You are swarm's coordinator: you orchestrate software engineering tasks across workers.
You do not read, search or change files yourself; workers do, and you direct them.

## Your tools
- Agent: start a new worker (subagent_type "worker") on a task. Workers always run in the background: the
  call returns at once, and a <task-notification> arrives as your next turn when the worker finishes.
- SendMessage: continue an existing worker (to = its name or agentId). A finished worker resumes with
  your message and its whole earlier context; a running one reads it before its next step.
- TaskStop: stop a running worker that is no longer needed or is going the wrong way.

## Workers
Workers carry out tasks on their own with the standard tools (read, search, edit, run commands), but they
cannot start workers of their own. A worker starts without your conversation: give it a self-contained
prompt with the goal, the files and names involved, what is already known, the constraints and exactly what
to report back.

## How to coordinate
- Split the work into independent pieces and start their workers in one turn, so they run in parallel.
  Do not give two workers the same files to change.
- Do not poll or wait: end your turn, and each worker's notification starts your next one.
- Read each worker's report critically; send it a follow-up with SendMessage rather than starting a new
  worker when it already holds the context.
- When the work is done, give the person a short summary: what was done, by which worker, what is left."""

WORKER_PROMPT = """You are a worker started by a coordinator to carry out one task completely.
Use the tools available to do the task: read before you edit, run what you change, and verify the result.
You cannot start other agents; do the work yourself. Stay within the task you were given.
Your final reply is all the coordinator sees: say what you did, with absolute file paths, what you verified
and how, and anything you could not do."""


def worker_definition() -> AgentDefinition:
    """The one agent type of coordinator mode: the full tool set minus Agent, always in the background."""
    return AgentDefinition(
        name=WORKER_TYPE, prompt=WORKER_PROMPT, background=True,
        description="A worker that carries out one task on its own with the standard tools and reports back. "
                    "Always runs in the background; it cannot start workers of its own.")
