"""``swarm demo``: a lead model runs a team, offline, in a throwaway git repository.

The lead is a scripted model (``examples/lead/lead.toml``) driving the same
loop as ``swarm run`` with a real model: it creates the team, writes a task
list with a dependency, starts an implementer and a tester in their own
worktrees (their playbooks and the lead policy come from
``examples/lead/team.toml``), reads what they report, and shuts them down.
Their branches then go into the repository's branch through the merge
queue (``swarm.runtime.merge_queue``), the tester's test run after each.

Everything a demo makes is named after its root directory: the repository
and home under it, and its private tmux server (``demo_socket``), so that
``abort`` (after Ctrl-C or a failure, at any moment) and ``cleanup`` find and
remove all of it: teammates, the server and its socket file, the directory.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from swarm.agent.definitions import load_agents
from swarm.agent.headless import MainOptions, MainSession
from swarm.agent.limits import Limits
from swarm.agent.skills import load_skills
from swarm.agent.mcp.lifecycle import OFF_VAR as MCP_OFF_VAR
from swarm.agent.trust import TRUST_VAR
from swarm.agent.tools.team_tools import team_tools
from swarm.backends.git import git
from swarm.backends.select import make_backend, tmux_usable
from swarm.core.home import Home
from swarm.core.permlog import PermissionEvent, PermissionLog
from swarm.core.protocol import LeadPolicy
from swarm.core.sandbox_config import SandboxSettings
from swarm.core.teams import TeamStore
from swarm.errors import BackendError, SwarmError
from swarm.models.base import ModelProvider
from swarm.models.scripted import SCRIPTED, ScriptedProvider
from swarm.runtime.lead_inbox import LeadMessage
from swarm.runtime.lead import LeadOutcome, LeadTeam, run_lead
from swarm.runtime.merge_queue import QueueRun, run_queue
from swarm.runtime.sample_repo import examples_dir, make_sample_repo
from swarm.runtime.up import Report, stop_team
from swarm.runtime.upfile import load_upfile

DEMO_TEAM = "feature"
"""The team the demo's lead creates (``examples/lead/lead.toml``)."""
DEMO_EXAMPLE = "lead"
DEMO_PROMPT = ("Add slugify(text) to text_utils.py with a test. Lead a team: one teammate implements it, "
               "another tests it once it is implemented; then shut the team down.")
TIMEOUT = 120.0
DEMO_TEST = "if [ -f test_slugify.py ]; then python3 test_slugify.py; fi"
"""The merge queue's test after each merge: the tester's test, once it is there."""


@dataclass
class DemoRun:
    root: Path
    repo: Path
    home: Home
    backend: str
    tmux_socket: str | None
    own_socket: bool
    """The tmux server was made for this demo (and is killed by ``cleanup``)."""
    report: Report
    chatter: list[tuple[str, str, str]]
    """(from, to, text) of messages teammates sent each other."""
    history: str
    """``git log --graph --all`` of the demo repository afterwards."""
    answer: str = ""
    """The lead model's final answer."""
    sandbox: bool = False
    """The teammates' Bash ran in the OS sandbox (``--sandbox``): their commands needed no prompt."""
    permission_requests: int = 0
    """How many permission requests the teammates sent the lead."""
    merged: QueueRun | None = None
    """The teammates' branches brought into the repository's branch through the merge queue."""


def run_demo(env: Mapping[str, str], *, backend: str = "auto", root: Path | None = None,
             on_message: Callable[[LeadMessage], None] = lambda m: None,
             on_decision: Callable[[PermissionEvent], None] = lambda d: None, sandbox: bool = False) -> DemoRun:
    """Make a sample repo and a private home under ``root`` (a new temp dir by default) and run the team
    (``sandbox``: every teammate's Bash in the OS sandbox)."""
    root = root or Path(tempfile.mkdtemp(prefix="swarm-demo-"))
    repo = make_sample_repo(root / "repo")
    home = Home(root / "home")
    socket, own_socket = demo_socket(root, env)
    chosen = make_backend(backend, env=env, tmux_socket=socket).name
    outcome = _lead(home, repo, {**env, "SWARM_HOME": str(home.root)}, chosen,
                    socket if chosen == "tmux" else None, on_message, on_decision, sandbox)
    if outcome.report is None:
        raise SwarmError(f"the demo's lead did not create its team ({outcome.reason}): {outcome.run.detail}")
    # ok is run_lead's verdict; the reason reads as swarm up's (a finished team run is "settled")
    report = outcome.report.model_copy(update={"reason": "settled" if outcome.reason == "done" else outcome.reason})
    merged = run_queue(home, DEMO_TEAM, [], into=None, test=DEMO_TEST, cwd=repo) if report.ok else None
    return DemoRun(root=root, repo=repo, home=home, backend=chosen, tmux_socket=socket if chosen == "tmux" else None,
                   own_socket=own_socket and chosen == "tmux", report=report, chatter=_chatter(home, DEMO_TEAM),
                   history=git(repo, "log", "--graph", "--oneline", "--all", "--decorate=short"),
                   answer=outcome.run.text, sandbox=sandbox, merged=merged,
                   permission_requests=sum(1 for e in PermissionLog(home, DEMO_TEAM).events() if e.event == "request"))


def _lead(home: Home, repo: Path, env: Mapping[str, str], backend: str, socket: str | None,
          on_message: Callable[[LeadMessage], None], on_decision: Callable[[PermissionEvent], None],
          sandbox: bool) -> LeadOutcome:
    """Run the scripted lead model on the demo prompt, with the example's policy and teammate playbooks."""
    example = examples_dir() / DEMO_EXAMPLE
    spec = load_upfile(example / "team.toml")
    offline = {k: v for k, v in env.items() if not k.startswith("ANTHROPIC_")}
    offline[TRUST_VAR] = str(repo)  # the demo made this repository itself: its skill is trusted for this run only
    offline[MCP_OFF_VAR] = "0"  # nor does it start the person's MCP servers (teammates inherit the variable)
    policy = LeadPolicy(allow=spec.lead.policy.allow, deny=spec.lead.policy.deny, plans=spec.lead.policy.plans)
    lead = LeadTeam(home, offline, repo, backend=backend, tmux_socket=socket, policy=policy,
                    playbooks={m.name: m.playbook for m in spec.members if m.playbook is not None},
                    sandbox=SandboxSettings(enabled=True, fail_if_unavailable=True) if sandbox else None)

    def scripted(model: str) -> ModelProvider:
        return ScriptedProvider(example / "lead.toml", variables={"agent_name": "team-lead", "team": DEMO_TEAM})

    main = MainOptions(catalog=load_agents(repo, env=offline), env=offline, make_provider=scripted,
                     agents_dir=home.root / "runs" / "demo", skills=load_skills(repo, env=offline))
    session = MainSession(scripted(SCRIPTED), cwd=repo, limits=Limits(max_turns=50), main=main,
                          extra_tools=team_tools(lead), team_control=lead,
                          transcript=home.root / "runs" / "demo" / "lead.jsonl")
    try:
        return run_lead(session, lead, DEMO_PROMPT, timeout=TIMEOUT, shutdown_timeout=spec.lead.shutdown_timeout,
                        on_message=on_message, on_decision=on_decision)
    finally:
        session.close()


def _chatter(home: Home, team: str) -> list[tuple[str, str, str]]:
    """Messages between teammates, read back from their transcripts."""
    found = []
    transcripts = home.transcripts_dir(team)
    for path in sorted(transcripts.glob("*.jsonl")) if transcripts.is_dir() else []:
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if record.get("kind") != "message" or record["message"]["role"] != "assistant":
                continue
            for block in record["message"]["content"]:
                if block.get("type") == "tool_use" and block.get("name") == "SendMessage":
                    to = str(block["input"].get("to"))
                    if to != "team-lead":
                        found.append((path.stem, to, str(block["input"].get("message"))))
    return found


def demo_socket(root: Path, env: Mapping[str, str]) -> tuple[str, bool]:
    """The tmux server of the demo under ``root``, and whether the demo owns it (made it, so stops it)."""
    given = env.get("SWARM_TMUX_SOCKET")
    if given:
        return given, False
    return f"swarm-demo-{hashlib.sha256(str(root).encode()).hexdigest()[:10]}", True


def abort(root: Path, env: Mapping[str, str]) -> None:
    """After a Ctrl-C or a failure: stop whatever the demo started under ``root`` and remove it.

    The team (if it is still there) is forced down at once; the demo's own
    tmux server goes with its socket file even when the team was already gone.
    """
    home = Home(root / "home")
    if TeamStore(home).exists(DEMO_TEAM):
        stop_team(home, DEMO_TEAM, env, timeout=0.0, reason="demo interrupted")
    socket, own = demo_socket(root, env)
    if own:
        _stop_server(socket, env)
    shutil.rmtree(root, ignore_errors=True)


def cleanup(run: DemoRun, env: Mapping[str, str]) -> None:
    """Remove the demo directory and the demo's private tmux server (with its socket file), if any is left."""
    if run.own_socket and run.tmux_socket:
        _stop_server(run.tmux_socket, env)
    shutil.rmtree(run.root, ignore_errors=True)


def _stop_server(socket: str, env: Mapping[str, str]) -> None:
    if not tmux_usable(env):
        return
    from swarm.backends.tmux_backend import (
        TmuxBackend,  # libtmux only when tmux is used
    )

    with contextlib.suppress(BackendError):
        TmuxBackend(socket, env).kill_server()
