"""A lead model places a teammate on a host: ``Agent(host=…)`` through a real main session (scripted lead model) and a
real `swarm host serve`; the same narrowing as a teammate on this machine (the attacker asks for a wider mode, a
directory it may not write, and what a host cannot carry), the team's git remote, and clear refusals."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from swarm.agent.definitions import load_agents
from swarm.agent.headless import MainOptions, MainSession
from swarm.agent.limits import Limits
from swarm.agent.tool_api.context import AgentIdentity, ToolContext, ToolError
from swarm.agent.tools.team_tools import team_tools
from swarm.core.home import Home
from swarm.core.sandbox_config import SandboxSettings
from swarm.core.teams import TeamStore
from swarm.models.scripted import ScriptedProvider
from swarm.runtime.lead import LeadTeam
from tests.backends.helpers import retry_until
from tests.runtime.hosts.conftest import HostProc, Site
from tests.runtime.hosts.test_hosts import _texts
from tests.teammate.conftest import PLAYBOOK

LEAD = r"""
[[rules]]
name = "place"
on = "prompt"
match = 'place (?P<who>\w+)'
[[rules.steps]]
tool_calls = [{ name = "Agent", input = { description = "mate", name = "{who}", team_name = "t", prompt = "ping one", ARGS } }]
[[rules.steps]]
text = "placed"
"""


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True).stdout.strip()


def _repo(site: Site) -> tuple[Path, Path]:
    """A bare remote and the lead's checkout (no origin) with one commit."""
    remote, src = site.tmp / "remote.git", site.tmp / "src"
    _git(site.tmp, "init", "-q", "--bare", str(remote))
    src.mkdir()
    _git(src, "init", "-q")
    (src / "README").write_text("base\n")
    _git(src, "add", "README")
    _git(src, "-c", "user.name=l", "-c", "user.email=l@example.invalid", "commit", "-qm", "base")
    return remote, src


def _lead_turn(site: Site, lead: LeadTeam, cwd: Path, who: str, args: str) -> list[dict[str, Any]]:
    """One turn of a scripted lead model calling ``Agent(name=who, team_name="t", ARGS)``; its tool results."""
    book = site.tmp / f"lead-{who}.toml"
    book.write_text(LEAD.replace("ARGS", args))
    transcript = site.tmp / f"lead-{who}.jsonl"
    env = dict(os.environ)
    main = MainOptions(catalog=load_agents(cwd, env=env), env=env, make_provider=lambda m: ScriptedProvider(),
                       agents_dir=site.tmp / "runs")
    session = MainSession(ScriptedProvider(book), cwd=cwd, limits=Limits(max_turns=5), main=main,
                          transcript=transcript, extra_tools=team_tools(lead), team_control=lead)
    try:
        session.start(f"place {who}")
    finally:
        session.close()
    return [block for line in transcript.read_text().splitlines() for block in json.loads(line).get("message", {})
            .get("content", []) if isinstance(block, dict) and block.get("type") == "tool_result"]


def _lead(site: Site, cwd: Path, **extra: Any) -> LeadTeam:
    """The runtime side of a lead model leading the site's team ``t`` (whose key the host trusts)."""
    lead = LeadTeam(site.lead, dict(os.environ), cwd, backend="subprocess",
                    playbooks={n: site.tmp / "mate.toml" for n in ("mate", "wide", "out", "mate2")}, **extra)
    (site.tmp / "mate.toml").write_text(PLAYBOOK)
    lead.team = "t"
    lead.led.append("t")
    return lead


def test_a_lead_model_places_a_teammate_on_a_host_narrowed_as_here_with_the_teams_remote(
        site: Site, start_host: Callable[..., HostProc]) -> None:
    remote, src = _repo(site)
    TeamStore(site.lead).modify("t", lambda t: setattr(t, "repo", str(remote)))
    host = start_host("h1")
    lead = _lead(site, src)

    # the attacker: a mode wider than the person granted (default), a directory outside what it may write
    [wide] = _lead_turn(site, lead, src, "wide", 'host = "h1", mode = "bypassPermissions"')
    assert wide["is_error"] and "wider than what this session may grant ('default')" in str(wide["content"])
    [out] = _lead_turn(site, lead, src, "out", f'host = "h1", cwd = "{site.tmp}"')
    assert out["is_error"] and "outside the directories you may write" in str(out["content"])
    assert {m.name for m in TeamStore(site.lead).get("t").members} == {"team-lead"}  # nothing placed, no entry
    assert host.live_pids() == []

    [ok] = _lead_turn(site, lead, src, "mate", 'host = "h1"')
    assert not ok.get("is_error"), ok
    assert "on host h1" in str(ok["content"])
    member = TeamStore(site.lead).get("t").member("mate")
    assert member is not None and member.host == "h1" and member.backend_type == "subprocess"  # the lead's backend, on the host
    assert member.mode == "default"  # the grant, not wider
    retry_until(lambda: "pong one from mate" in _texts(site), 20, what="the placed teammate's pong")
    # its code came through the team's remote: a clone on the host on its own branch from the lead's commit
    work = host.home.root / "work" / "t" / "mate"
    assert _git(work, "rev-parse", "--abbrev-ref", "HEAD") == "swarm/t/mate"
    assert _git(work, "rev-parse", "HEAD") == _git(src, "rev-parse", "HEAD") == _git(remote, "rev-parse", "swarm/t/base")


def test_what_a_host_cannot_carry_and_hosts_that_are_not_there_are_refused_at_once(
        site: Site, start_host: Callable[..., HostProc]) -> None:
    start_host("h1", "--labels", "gpu")
    lead = _lead(site, site.tmp, place_timeout=60)
    ctx = ToolContext(AgentIdentity(cwd=site.tmp, write_roots=[site.tmp]))
    base: dict[str, Any] = dict(name="mate", prompt="ping one", agent_type=None, model=None, runtime=None,
                                isolation=None, plan_mode_required=False, mode=None, cwd=None)
    began = time.monotonic()
    for how, why in [({"host": "h9"}, "no live host 'h9' in team 't'"),
                     ({"labels": ["cpu"]}, "no live host has all the labels cpu"),
                     ({"host": "h1", "plan_mode_required": True}, "plan_mode_required is not carried"),
                     ({"host": "h1", "runtime": "claude"}, 'runtime "claude" runs on this machine only'),
                     ({"host": "h1", "sandbox": SandboxSettings(enabled=True)}, "does not apply that sandbox")]:
        lead.sandbox = how.pop("sandbox", None)
        try:
            lead.spawn(ctx, **(base | how))
        except ToolError as exc:
            assert why in str(exc), exc
            assert "live hosts: h1 [gpu]" in str(exc) or "live host" not in why
        else:
            raise AssertionError(f"{how} was not refused")
    assert time.monotonic() - began < 10  # at once: no placement waited out its timeout
    assert TeamStore(site.lead).get("t").member("mate") is None


def test_a_lead_model_asking_for_a_host_in_a_file_team_is_told_it_needs_postgresql(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    lead = LeadTeam(home, {}, tmp_path, backend="subprocess")
    ctx = ToolContext(AgentIdentity(cwd=tmp_path, write_roots=[tmp_path]))
    lead.create("files", None, ctx)
    try:
        lead.spawn(ctx, name="mate", prompt="p", agent_type=None, model=None, runtime=None, isolation=None,
                   plan_mode_required=False, mode=None, cwd=None, host="h1")
    except ToolError as exc:
        assert "needs a PostgreSQL team" in str(exc)
    else:
        raise AssertionError("a file team placed a teammate on a host")
    assert TeamStore(home).get("files").member("mate") is None
