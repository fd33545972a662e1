"""ExitPlanMode: a teammate in plan mode submits its plan and waits for the lead."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from swarm.agent.tool_api.base import Tool
from swarm.agent.tool_api.context import ToolContext
from swarm.teammate.gate import TeammateGate


class ExitPlanModeInput(BaseModel):
    model_config = ConfigDict(extra="ignore")

    plan: str = Field(description="The plan, in markdown: what you will change and how you will check it.")


class ExitPlanMode(Tool[ExitPlanModeInput]):
    name = "ExitPlanMode"
    description = ("Submit your plan to the lead for approval. Until it is approved you may only use read-only "
                   "tools; the result tells you whether it was approved or what to change.")
    input_model = ExitPlanModeInput
    read_only = True

    def __init__(self, gate: TeammateGate) -> None:
        self.gate = gate

    def run(self, args: ExitPlanModeInput, ctx: ToolContext) -> str:
        return self.gate.submit_plan(args.plan)
