"""A lead's team tools: TeamCreate, TeamDelete and MergeQueue, over a ``TeamControl`` the runtime provides.

The agent layer cannot start processes or worktrees itself (those live in the
runtime, above it); whoever runs a lead agent hands it a ``TeamControl``
(``swarm.runtime.lead``), and the tools — and the Agent tool's teammate path,
and SendMessage's shutdown and plan answers — go through it. An agent without
one (a teammate, a subagent) does not get these tools.
"""

from __future__ import annotations

from pydantic import Field

from swarm.agent.tool_api.base import Tool
from swarm.agent.tool_api.context import TeamControl, ToolContext, ToolError
from swarm.agent.tool_api.inputs import NoneOmitted, ToolInput


class TeamCreateInput(ToolInput):
    team_name: str = Field(description="Name of the new team (letters, digits, - and _).")
    description: str | NoneOmitted = Field(default=None, description="What the team is for.")


class TeamCreate(Tool[TeamCreateInput]):
    name = "TeamCreate"
    description = ("Create a team that you lead (as team-lead). Then write its task list with TaskCreate, start "
                   "teammates with Agent (team_name + name), talk to them with SendMessage, and delete the team "
                   "with TeamDelete when they have all shut down. One team at a time.")
    input_model = TeamCreateInput
    read_only = True

    def __init__(self, control: TeamControl) -> None:
        self.control = control

    def run(self, args: TeamCreateInput, ctx: ToolContext) -> str:
        return self.control.create(args.team_name, args.description, ctx)


class TeamDeleteInput(ToolInput):
    pass


class TeamDelete(Tool[TeamDeleteInput]):
    name = "TeamDelete"
    description = ("Delete your team (its inboxes and task list) once every teammate has shut down; "
                   "ask them first with SendMessage {type: 'shutdown_request'}.")
    input_model = TeamDeleteInput
    read_only = True

    def __init__(self, control: TeamControl) -> None:
        self.control = control

    def run(self, args: TeamDeleteInput, ctx: ToolContext) -> str:
        return self.control.delete(ctx)


class MergeQueueInput(ToolInput):
    names: list[str] = Field(default_factory=list, description="Teammates whose branches to merge (default: all "
                                                                "that have a worktree branch).")
    into: str | NoneOmitted = Field(default=None, description="Branch to merge into (default: the checked-out one).")
    test: str | NoneOmitted = Field(default=None, description="Shell command run after each merge; a failure "
                                                              "stops the queue.")


class MergeQueue(Tool[MergeQueueInput]):
    name = "MergeQueue"
    description = ("Merge your teammates' branches into the person's branch one at a time, in the order of their "
                   "tasks' dependencies, running the test command after each. A conflict or a failing test stops "
                   "the queue, leaves the branch as it was and is sent to that teammate to fix; call it again "
                   "once the teammate says it is fixed. It writes to git: it needs the person's permission.")
    input_model = MergeQueueInput
    read_only = False  # a git write: asked for, or allowed by a rule, like Bash that commits

    def __init__(self, control: TeamControl) -> None:
        self.control = control

    def run(self, args: MergeQueueInput, ctx: ToolContext) -> str:
        return self.control.merge(list(args.names), args.into, args.test)


def team_tools(control: TeamControl) -> list[Tool[TeamCreateInput] | Tool[TeamDeleteInput] | Tool[MergeQueueInput]]:
    return [TeamCreate(control), TeamDelete(control), MergeQueue(control)]


def require_team(ctx: ToolContext) -> TeamControl:
    """The lead's team control; a tool error for an agent that leads no team."""
    if ctx.services.team_control is None:
        raise ToolError("only a team lead can do this, and this agent leads no team")
    return ctx.services.team_control
