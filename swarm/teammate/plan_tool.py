"""ExitPlanMode: a teammate in plan mode submits its plan and waits for the lead.

The plan is ``plan`` when given; without it (Claude Code's ExitPlanMode has no
such field: its plan is in a file a model in plan mode writes), it is the text
of the assistant message that made the call, the plan the model just wrote
out. With neither, the call is refused with what to send.
"""

from __future__ import annotations

from pydantic import Field

from swarm.agent.tool_api.base import Tool
from swarm.agent.tool_api.context import ToolContext, ToolError
from swarm.agent.tool_api.inputs import NoneOmitted, ToolInput
from swarm.teammate.gate import TeammateGate


class ExitPlanModeInput(ToolInput):
    plan: str | NoneOmitted = Field(
        default=None, description="The plan, in markdown: what you will change and how you will check it "
        "(default: the text of this message).")


class ExitPlanMode(Tool[ExitPlanModeInput]):
    name = "ExitPlanMode"
    description = ("Submit your plan to the lead for approval. Until it is approved you may only use read-only "
                   "tools; the result tells you whether it was approved or what to change.")
    input_model = ExitPlanModeInput
    read_only = True

    def __init__(self, gate: TeammateGate) -> None:
        self.gate = gate

    def run(self, args: ExitPlanModeInput, ctx: ToolContext) -> str:
        plan = args.plan
        if not plan and ctx.turn.running is not None:
            plan = ctx.turn.running.conversation.last_text().strip()
        if not plan:
            raise ToolError("no plan to submit: write the plan in `plan` (markdown: what you will change and how "
                            "you will check it)")
        return self.gate.submit_plan(plan, interrupt=ctx.turn.interrupt)
