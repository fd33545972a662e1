"""What a teammate wrote never drives the person's terminal: every command shows it escaped.

A hostile teammate (its model, or its Bash writing the team's files directly)
plants escape sequences — an OSC 52 clipboard write, a title change, a screen
clear, the one-byte C1 forms, a bidi override, a carriage return — in a
message, its sender name, a task, a permission request, a plan, the team file
and its log. Each command that shows them runs as the installed executable
with its output on a real pty; no control reaches it, and the text is still
there to read, escaped.
"""

from __future__ import annotations

import json

import pytest

from swarm.agent.live_events import EventLog, LiveEvent
from swarm.core.clock import now_ms
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.names import LEAD_NAME
from swarm.core.permlog import PermissionEvent, PermissionLog
from swarm.core.protocol import Member
from swarm.core.tasks import TaskStore
from swarm.core.teams import TeamStore
from tests.cli.conftest import HOSTILE, on_a_terminal, terminal_controls

TEAM = "t"
MOLE = "mole"


@pytest.fixture
def planted(home: Home) -> Home:
    """Team ``t`` with teammate ``mole``, whose writings carry ``HOSTILE`` everywhere the person may look."""
    TeamStore(home).create(TEAM, description=f"team {HOSTILE}")
    TeamStore(home).add_member(TEAM, Member(agent_id=f"{MOLE}@{TEAM}", name=MOLE, backend_type="subprocess",
                                            cwd=str(home.root), model=f"m {HOSTILE}", status="idle",
                                            is_active=False))
    config = home.config_path(TEAM)
    data = json.loads(config.read_text())  # what the mole's Bash could do to the team file
    data["members"][-1]["color"] = f"red{HOSTILE}"
    config.write_text(json.dumps(data))
    mailbox = Mailbox(home, TEAM)
    mailbox.send(LEAD_NAME, f"text {HOSTILE}", sender=MOLE)
    mailbox.send(LEAD_NAME, "body", sender=MOLE, summary=f"summary {HOSTILE}")
    inbox = home.inbox_path(TEAM, LEAD_NAME)
    entries = json.loads(inbox.read_text())  # an entry whose sender is forged, written straight into the file
    entries.append({**entries[0], "from": f"x{HOSTILE}", "text": f"forged {HOSTILE}"})
    inbox.write_text(json.dumps(entries))
    TaskStore(home, TEAM).create(f"subject {HOSTILE}", f"description {HOSTILE}")
    log = PermissionLog(home, TEAM)
    log.record_request(PermissionEvent(event="request", request_id="perm-1", ts=now_ms(), agent=MOLE,
                                       tool=f"Tool{HOSTILE}", input={"x": f"input {HOSTILE}"}))
    log.record_request(PermissionEvent(event="request", request_id="plan-1", ts=now_ms(), kind="plan",
                                       agent=f"{MOLE}\x1b]0;pwned\x07", plan=f"plan {HOSTILE}\nstep two {HOSTILE}"))
    events = EventLog(home.events_path(TEAM, MOLE))  # its live events: what its model wrote, and forged fields
    events.emit(LiveEvent(type="text", text=f"streamed {HOSTILE}", final=True))
    events.emit(LiveEvent(type="tool_end", number=1, tool=f"Bash{HOSTILE}", target=f"run: {HOSTILE}",
                          outcome=f"ok: {HOSTILE}"))
    events.emit(LiveEvent(type="message", sender=f"x{HOSTILE}", text=f"message {HOSTILE}"))
    events.emit(LiveEvent(type="request", request_id=f"perm{HOSTILE}", kind="permission", text=f"run {HOSTILE}"))
    home.log_path(TEAM, MOLE).parent.mkdir(parents=True, exist_ok=True)
    home.log_path(TEAM, MOLE).write_text(f"log line {HOSTILE}\n")
    return home


@pytest.mark.parametrize("args", [
    ["inbox", LEAD_NAME, "--team", TEAM],
    ["inbox", LEAD_NAME, "--team", TEAM, "--json"],
    ["tasks", "--team", TEAM],
    ["tasks", "--team", TEAM, "--json"],
    ["permissions", "--team", TEAM],
    ["permissions", "--team", TEAM, "--json"],
    ["status", "--team", TEAM],
    ["team", "show", TEAM],
    ["team", "list"],
    ["logs", MOLE, "--team", TEAM],
    ["logs", MOLE, "--team", TEAM, "--json"],
    ["logs", MOLE, "--team", TEAM, "--log"],
    ["inbox", LEAD_NAME, "--team", TEAM, "--take"],
], ids=lambda args: "-".join(a for a in args if a not in (TEAM, "--team", LEAD_NAME, MOLE)))
def test_no_control_a_teammate_wrote_reaches_the_terminal(planted: Home, args: list[str]) -> None:
    shown = on_a_terminal(args)
    assert "Traceback" not in shown and "error" not in shown, shown
    assert terminal_controls(shown) == [], shown
    if "--json" in args:  # the same JSON, its controls as \u escapes
        assert "\\u001b]0;pwned\\u0007" in shown and "\\u009d0;c1 title" in shown, shown
    else:
        assert "\\x1b]0;pwned\\x07" in shown, shown
