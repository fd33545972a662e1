"""One agent, one prompt, no team: what ``swarm run -p`` does."""

from __future__ import annotations

import threading
from pathlib import Path

from swarm.agent.conversation import Conversation
from swarm.agent.limits import Limits
from swarm.agent.loop import AgentRun, AgentSpec, run_agent
from swarm.agent.prompts import system_prompt
from swarm.agent.tools import core_tools
from swarm.agent.tools.base import ToolContext
from swarm.agent.transcript import Transcript
from swarm.models.base import ModelProvider


def run_headless(prompt: str, provider: ModelProvider, *, cwd: Path, limits: Limits,
                 transcript: Path | None = None, confine_writes: bool = True,
                 cancel: threading.Event | None = None) -> AgentRun:
    """Run ``prompt`` to the end with the core tools in ``cwd``."""
    ctx = ToolContext(cwd=cwd, write_roots=[cwd] if confine_writes else None,
                      cancel=cancel or threading.Event())
    conversation = Conversation(transcript=Transcript(transcript) if transcript else None)
    conversation.add_user_text(prompt)
    spec = AgentSpec(provider=provider, tools=core_tools(), system=system_prompt(cwd), limits=limits)
    try:
        return run_agent(spec, conversation, ctx)
    finally:
        for proc in ctx.background:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
