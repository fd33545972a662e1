"""The hooks of a call that needs approval: ``PermissionRequest`` (may answer it) and ``Notification`` (hears of it).

A gate calls ``permission_request`` when rules and mode leave a call to ask
(the person for the lead's own calls, the lead for a teammate's), before
asking. A hook may answer for the asker:

- ``deny`` (``decision.behavior: "deny"`` with ``message``, exit 2 with
  stderr): the call is refused and the model reads why;
- ``allow``: the call runs without asking, but only where an allow rule could
  have let it run — the ask came from the mode's default, not from an ask
  rule, a protected file or a deny rule the command might break — and only
  from a settings file's hook (never a definition's). Anything else asks as
  before. So a hook answers the routine questions the person would, never
  one the person's rules reserve for themselves.

``notify`` fires ``Notification`` hooks (``notification_type``:
``permission_prompt``) when the person is about to be asked;
``stalled_hooks`` with ``teammate_stalled`` when the watchdog tells the lead
a teammate seems stuck (``runtime/watchdog.py``): the person should look, as
for Claude Code's ``idle_prompt``. Not ``TeammateIdle``: that fires in the
teammate as it is about to go idle and may keep it working; a stalled
teammate is busy, not going idle, and nothing a hook answers can unstick it.
"""

from __future__ import annotations

from typing import Any, Literal

from swarm.agent.hooks.tool_calls import transcript_of
from swarm.agent.tool_api.context import ToolContext, ToolError

Answer = Literal["allow", "ask"]


def permission_request(ctx: ToolContext, tool: str, tool_input: dict[str, Any], *, mode: str, asked_by: str) -> Answer:
    """What the ``PermissionRequest`` hooks answer for the call (``asked_by``: the ``Decision.by`` that asks);
    ToolError when one denies it."""
    hooks = ctx.services.hooks
    if hooks is None or not hooks.active("PermissionRequest", tool):
        return "ask"
    outcome = hooks.fire("PermissionRequest", target=tool, transcript=transcript_of(ctx), permission_mode=mode,
                         cwd=ctx.cwd, tool_name=tool, tool_input=tool_input)
    if outcome.blocked or outcome.permission == "deny":
        raise ToolError(f"permission denied by a PermissionRequest hook: {outcome.reason}")
    if outcome.permission == "allow" and outcome.permission_trusted and asked_by.startswith("mode:"):
        return "allow"
    return "ask"


def notify(ctx: ToolContext, message: str, *, kind: str = "permission_prompt") -> None:
    """``Notification`` hooks: the person is about to be asked (they cannot change anything)."""
    hooks = ctx.services.hooks
    if hooks is not None and hooks.active("Notification", kind):
        hooks.fire("Notification", target=kind, transcript=transcript_of(ctx), cwd=ctx.cwd, message=message,
                   notification_type=kind)


STALLED = "teammate_stalled"
"""``notification_type`` of the watchdog's report that a teammate seems stuck."""


def stalled_hooks(ctx: ToolContext, message: str) -> None:
    """The lead's ``Notification`` hooks hear that the watchdog reported a stalled teammate (``message``)."""
    notify(ctx, message, kind=STALLED)
