"""The teammate's command line, parsed into one validated object."""

from __future__ import annotations

import argparse
from pathlib import Path

from pydantic import BaseModel

from swarm.agent.permissions.policy import PERMISSION_MODES
from swarm.core.names import validate_name

PLAYBOOK_VARIABLES = ("agent_name", "team", "cwd", "branch")
"""The variables a teammate gives its scripted playbook, in this order of values: name, team, cwd, worktree branch."""


class TeammateConfig(BaseModel):
    team: str
    name: str
    agent_id: str
    color: str | None = None
    parent_session: str | None = None
    agent_type: str = "general-purpose"
    model: str | None = None
    permission_mode: str = "default"
    plan_mode_required: bool = False
    cwd: Path
    playbook: Path | None = None
    backend: str = "subprocess"
    home: Path | None = None
    allowed_tools: list[str] = []
    disallowed_tools: list[str] = []
    skills: list[str] = []
    """Skills preloaded into the system prompt (the team file's ``skills`` for this member)."""
    permission_timeout: float = 300.0
    """Seconds a permission or plan request waits for the lead before it counts as denied."""
    lead_verify_key: str | None = None
    """``<ms>.<base64url SPKI>`` of the lead's Ed25519 key (Claude Code's format); without it no
    lead-only frame (shutdown, permission or plan answer) can be verified, so none is acted on."""

    def argv(self) -> list[str]:
        """The arguments that recreate this config (after the program)."""
        args = ["--team", self.team, "--name", self.name, "--agent-id", self.agent_id,
                "--agent-type", self.agent_type, "--permission-mode", self.permission_mode,
                "--cwd", str(self.cwd), "--backend", self.backend]
        for flag, value in (("--color", self.color), ("--parent-session", self.parent_session),
                            ("--model", self.model), ("--playbook", self.playbook), ("--home", self.home),
                            ("--lead-verify-key", self.lead_verify_key)):
            if value is not None:
                args += [flag, str(value)]
        if self.plan_mode_required:
            args.append("--plan-mode-required")
        for rule in self.allowed_tools:
            args += ["--allowed-tool", rule]
        for rule in self.disallowed_tools:
            args += ["--disallowed-tool", rule]
        for skill in self.skills:
            args += ["--skill", skill]
        args += ["--permission-timeout", f"{self.permission_timeout:g}"]
        return args


def parse_args(argv: list[str]) -> TeammateConfig:
    parser = argparse.ArgumentParser(prog="python -m swarm.teammate",
                                     description="A swarm teammate process (started by `swarm spawn`).")
    parser.add_argument("--team", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--agent-id", required=True)
    parser.add_argument("--color")
    parser.add_argument("--parent-session")
    parser.add_argument("--agent-type", default="general-purpose")
    parser.add_argument("--model")
    parser.add_argument("--permission-mode", default="default", choices=PERMISSION_MODES)
    parser.add_argument("--plan-mode-required", action="store_true")
    parser.add_argument("--cwd", required=True, type=Path)
    parser.add_argument("--playbook", type=Path)
    parser.add_argument("--backend", default="subprocess")
    parser.add_argument("--home", type=Path)
    parser.add_argument("--allowed-tool", dest="allowed_tools", action="append", default=[])
    parser.add_argument("--disallowed-tool", dest="disallowed_tools", action="append", default=[])
    parser.add_argument("--skill", dest="skills", action="append", default=[])
    parser.add_argument("--permission-timeout", type=float, default=300.0)
    parser.add_argument("--lead-verify-key")
    ns = parser.parse_args(argv)
    validate_name(ns.team, "team name")
    validate_name(ns.name, "agent name")
    return TeammateConfig(**{k: v for k, v in vars(ns).items() if v is not None})
