"""A mixed team with the real Claude Code CLI: a swarm lead, claude teammates and a swarm teammate.

Claude Code (the pinned version, ``conftest.claude_code``) runs in panes of a private tmux
server against the fake Messages API on loopback, which plays its model step by step (each
reply keyed by what came since the model's last turn: a marker, or the id of the tool call
being answered). The lead is this test, through swarm's Python API: bob (claude) gets a signed
task, claims and completes task 1, asks to run a command that the lead approves, messages the
lead and alice (swarm's own teammate), hears from alice, and approves the signed shutdown;
carol (claude, plan mode, own worktree) has her plan approved through the desk, ignores the
shutdown and is forced down, her clean worktree removed. Every process and pane is gone at the end.
HOME, SWARM_HOME, CLAUDE_CONFIG_DIR (the top conftest) and the tmux socket are the test's own.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from swarm.backends.procs import PROC_TOKEN_VAR, kill_tree
from swarm.core.frames import (
    IdleNotification,
    PermissionRequest,
    PlanApprovalRequest,
    ShutdownApproved,
    entry_frame,
)
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.names import LEAD_NAME
from swarm.core.permlog import PermissionEvent
from swarm.core.protocol import InboxEntry
from swarm.core.tasks import TaskStore
from swarm.core.teams import TeamStore
from swarm.runtime import permission_desk
from swarm.runtime.lead_inbox import catch_up
from swarm.runtime.sample_repo import make_sample_repo
from swarm.runtime.shutdown import shutdown
from swarm.runtime.spawn import SpawnRequest, spawn, wait_joined
from swarm.runtime.status import team_status
from tests.backends.helpers import retry_until
from tests.fakes import FakeAnthropicServer, text_reply, tool_use_reply
from tests.fakes.anthropic_server import ScriptedReply, message_json, since_model
from tests.forked import run_swarm
from tests.runtime.up.helpers import EXAMPLES

pytestmark = pytest.mark.timeout(240)

TEAM = "mix"
API_KEY = "sk-ant-api03-swarm-e2e-test-key-0123456789"
ALICE_PLAYBOOK = r"""
[[rules]]
name = "report"
on = "prompt"
match = 'ALICE-TASK'
[[rules.steps]]
tool_calls = [{ name = "SendMessage", input = { to = "team-lead", message = "ALICE-DONE from the swarm teammate", summary = "alice done" } }]
[[rules.steps]]
tool_calls = [{ name = "SendMessage", input = { to = "bob", message = "ALICE-HI from swarm", summary = "hi bob" } }]
[[rules.steps]]
text = "reported"

[[rules]]
name = "answer bob"
on = "prompt"
match = 'BOB-HI'
[[rules.steps]]
tool_calls = [{ name = "SendMessage", input = { to = "team-lead", message = "ALICE-GOT-BOB", summary = "alice heard bob" } }]
[[rules.steps]]
text = "told the lead"
"""


def _bob_script(server: FakeAnthropicServer, proof: str) -> None:
    """Claude Code's model for bob, one reply per step; anything else (titles, side requests) gets "OK"."""
    steps: list[tuple[str, ScriptedReply]] = [
        ("BOB-TASK", tool_use_reply("ToolSearch", {"query": "select:SendMessage,TaskUpdate,TaskList"},
                                    tool_id="toolu_bob_search")),
        ("toolu_bob_search", tool_use_reply("TaskUpdate", {"taskId": "1", "owner": "bob", "status": "in_progress"},
                                            tool_id="toolu_bob_claim")),
        ("toolu_bob_claim", tool_use_reply("Bash", {"command": f"touch {proof}", "description": "leave a proof"},
                                           tool_id="toolu_bob_bash")),
        ("toolu_bob_bash", tool_use_reply("TaskUpdate", {"taskId": "1", "status": "completed"},
                                          tool_id="toolu_bob_done")),
        ("toolu_bob_done", tool_use_reply("SendMessage", {"to": "team-lead", "message": "BOB-DONE: task 1 is complete",
                                                          "summary": "bob done"}, tool_id="toolu_bob_report")),
        ("toolu_bob_report", tool_use_reply("SendMessage", {"to": "alice", "message": "BOB-HI from Claude Code",
                                                            "summary": "hi alice"}, tool_id="toolu_bob_hi")),
        ("toolu_bob_hi", text_reply("Task 1 done and reported.")),
        ("shutdown_request", ScriptedReply(200, _approve_shutdown("bob", "toolu_bob_bye"))),
        ("toolu_bob_bye", text_reply("Shutting down.")),
    ]
    for after, reply in steps:
        server.enqueue(reply, after=after)
    server.otherwise(text_reply("OK"))


def _carol_script(server: FakeAnthropicServer) -> None:
    """carol works in plan mode: her first ExitPlanMode names the plan file; she writes it and submits again."""
    server.enqueue(tool_use_reply("ToolSearch", {"query": "select:ExitPlanMode"}, tool_id="toolu_carol_search"),
                   after="CAROL-TASK")
    server.enqueue(tool_use_reply("ExitPlanMode", {}, tool_id="toolu_carol_try"), after="toolu_carol_search")
    server.enqueue(ScriptedReply(200, _write_plan), after="toolu_carol_try")
    server.enqueue(tool_use_reply("ExitPlanMode", {}, tool_id="toolu_carol_plan"), after="toolu_carol_write")
    server.enqueue(text_reply("Waiting for the lead to approve my plan."), after="toolu_carol_plan")
    server.enqueue(text_reply("CAROL-PLAN-APPROVED, nothing to change."), after="[Plan Approved]")


def _write_plan(body: Any) -> dict[str, Any]:
    """Write the plan where Claude Code's refusal of the first ExitPlanMode says it looks for it."""
    plan_file = re.search(r"No plan file found at (/\S+?\.md)", json.dumps(since_model(body)))
    if plan_file is None:  # the test then fails waiting for the plan, with this in the transcript
        return message_json([{"type": "text", "text": "Claude Code named no plan file"}])
    return message_json([{"type": "tool_use", "id": "toolu_carol_write", "name": "Write",
                          "input": {"file_path": plan_file.group(1), "content": "CAROL-PLAN: change nothing"}}],
                        stop_reason="tool_use")


def _approve_shutdown(name: str, tool_id: str) -> Callable[[Any], dict[str, Any]]:
    """``name``'s model approving the shutdown request it was just shown (its id is made up by the lead)."""
    def answer(body: Any) -> dict[str, Any]:
        request_id = re.search(rf"shutdown-\d+@{name}", json.dumps(since_model(body)))
        if request_id is None:  # the test then fails waiting for the shutdown, with this in the transcript
            return message_json([{"type": "text", "text": f"no shutdown request for {name} here"}])
        frame = {"type": "shutdown_response", "request_id": request_id.group(), "approve": True}
        return message_json([{"type": "tool_use", "id": tool_id, "name": "SendMessage",
                              "input": {"to": "team-lead", "message": frame}}], stop_reason="tool_use")

    return answer


@pytest.fixture
def tmux_socket(tmp_path: Path) -> Iterator[str]:
    """A private tmux server (socket path in the test's tmp dir), killed at teardown."""
    socket = str(tmp_path / "tmux.sock")
    yield socket
    subprocess.run(["tmux", "-S", socket, "kill-server"], capture_output=True, check=False)


@pytest.fixture
def env(tmp_path: Path, api: FakeAnthropicServer) -> dict[str, str]:
    user_home = tmp_path / "user-home"
    user_home.mkdir()
    return {**os.environ, "HOME": str(user_home), "ANTHROPIC_API_KEY": API_KEY, "ANTHROPIC_BASE_URL": api.base_url,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}


def _token_processes(tokens: set[str]) -> list[int]:
    found = []
    for proc in psutil.process_iter(["status"]):
        try:
            if proc.info["status"] != psutil.STATUS_ZOMBIE and proc.environ().get(PROC_TOKEN_VAR) in tokens:
                found.append(proc.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def _lead_frames(home: Home) -> list[tuple[InboxEntry, Any]]:
    senders = TeamStore(home).get(TEAM).unmarked_senders()
    return [(e, entry_frame(e, unmarked_from=senders)) for e in Mailbox(home, TEAM).read(LEAD_NAME)]


def _git_repo(path: Path) -> None:
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "start"]):
        subprocess.run(["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@example.com",
                        "-c", "commit.gpgsign=false", *args], check=True, capture_output=True)


def _diagnose(api: FakeAnthropicServer, socket: str, home: Home) -> None:
    if os.environ.get("SWARM_E2E_DUMP"):
        Path(os.environ["SWARM_E2E_DUMP"]).write_text(json.dumps([r.body for r in api.requests]))
    for index, request in enumerate(api.requests):
        body = request.body if isinstance(request.body, dict) else {}
        last = json.dumps(since_model(body))[-400:]
        print(f"request {index}: {request.method} {request.path} last message: {last}")
    panes = subprocess.run(["tmux", "-S", socket, "list-panes", "-a", "-F", "#{pane_id}"], capture_output=True,
                           text=True).stdout.split()
    for pane in panes:
        shown = subprocess.run(["tmux", "-S", socket, "capture-pane", "-p", "-t", pane], capture_output=True, text=True)
        print(f"pane {pane}:\n{shown.stdout.strip()}")
    print("lead inbox:", [(e.sender, e.text[:200]) for e in Mailbox(home, TEAM).read(LEAD_NAME)])


def test_a_claude_code_teammate_works_beside_a_swarm_teammate(
        home: Home, tmp_path: Path, api: FakeAnthropicServer, env: dict[str, str], tmux_socket: str,
        claude_code: Path) -> None:
    started = time.monotonic()
    work = tmp_path / "work"
    work.mkdir()
    _git_repo(work)
    alice_book = tmp_path / "alice.toml"
    alice_book.write_text(ALICE_PLAYBOOK)
    _bob_script(api, "bob-proof.txt")
    _carol_script(api)
    TeamStore(home).create(TEAM, cwd=str(work))
    tasks = TaskStore(home, TEAM)
    tasks.create("bob: leave a proof file", "touch bob-proof.txt")
    tokens: set[str] = set()
    try:
        common: dict[str, Any] = {"team": TEAM, "cwd": work, "backend": "tmux", "tmux_socket": tmux_socket}
        alice = spawn(home, SpawnRequest(name="alice", prompt="ALICE-TASK: report to the lead",
                                         playbook=alice_book, **common), env)
        bob = spawn(home, SpawnRequest(name="bob", prompt="BOB-TASK: claim task 1, leave a proof, complete it",
                                       runtime="claude", claude_bin=str(claude_code), **common), env)
        carol = spawn(home, SpawnRequest(name="carol", prompt="CAROL-TASK: plan first", runtime="claude",
                                         claude_bin=str(claude_code), plan_mode_required=True, worktree=True,
                                         **common), env)
        tokens = {m.proc_token for m in (alice, bob, carol) if m.proc_token}
        wait_joined(home, TEAM, ["alice", "bob", "carol"], timeout=60)
        assert TeamStore(home).get(TEAM).member("bob").status == "running"  # type: ignore[union-attr]

        # bob asks to run Bash; the lead approves through the permission desk (a signed response)
        def asked() -> bool:
            return any(e.agent == "bob" and e.tool == "Bash" for e in _pending(home))

        retry_until(asked, 60, interval=0.1, what="bob's permission request")
        request = next(e for e in _pending(home) if e.agent == "bob")
        assert request.input["command"] == "touch bob-proof.txt"
        permission_desk.approve(home, TEAM, request.request_id)

        retry_until(lambda: TaskStore(home, TEAM).get("1").status == "completed", 60, interval=0.1,
                    what="bob to complete task 1")
        assert (work / "bob-proof.txt").exists()  # the approved command ran
        assert TaskStore(home, TEAM).get("1").owner == "bob"

        def reported() -> bool:
            texts = [(e.sender, e.text) for e, _ in _lead_frames(home)]
            return ("bob", "BOB-DONE: task 1 is complete") in texts and any(
                s == "alice" and "ALICE-DONE" in t for s, t in texts) and ("alice", "ALICE-GOT-BOB") in texts

        # ALICE-GOT-BOB: bob (Claude Code) messaged alice (swarm), whose playbook answers it to the lead
        retry_until(reported, 60, interval=0.1, what="both teammates' reports")
        # and alice's message reached bob's model as Claude Code shows a teammate's message
        retry_until(lambda: any('teammate_id=\\"alice\\"' in json.dumps(since_model(r.body)) and "ALICE-HI from swarm"
                                in json.dumps(since_model(r.body)) for r in api.requests), 30, interval=0.1,
                    what="alice's message in bob's conversation")
        retry_until(lambda: any(isinstance(f, IdleNotification) and f.sender == "bob" for _, f in _lead_frames(home)),
                    30, interval=0.1, what="bob's idle notification")
        rows = {row.name: row for row in team_status(home, TEAM, env)}
        assert rows["bob"].backend == "tmux" and rows["bob"].state in ("idle", "busy")
        assert rows["bob"].pane == bob.tmux_pane_id and rows["alice"].state in ("idle", "busy")
        # the request frame came from Claude Code itself: swarm took it as a real permission request
        assert any(isinstance(f, PermissionRequest) and f.tool_use_id == "toolu_bob_bash" for _, f in _lead_frames(home))

        # carol's plan reaches the lead's desk like a swarm teammate's, and the lead's signed answer reaches her
        retry_until(lambda: any(e.kind == "plan" and e.agent == "carol" for e in _pending(home)), 60,
                    interval=0.1, what="carol's plan")
        plan = next(e for e in _pending(home) if e.kind == "plan")
        assert plan.plan == "CAROL-PLAN: change nothing"

        def idle_since_plan() -> bool:  # answer once her turn is over, as a lead reading her inbox would
            frames = [f for _, f in _lead_frames(home) if getattr(f, "sender", None) == "carol"]
            asked = next((i for i, f in enumerate(frames) if isinstance(f, PlanApprovalRequest)), None)
            return asked is not None and any(isinstance(f, IdleNotification) for f in frames[asked:])

        retry_until(idle_since_plan, 60, interval=0.1, what="carol to finish the turn that submitted her plan")
        permission_desk.answer_plan(home, TEAM, plan.request_id, approved=True)
        def heard(verdict: str) -> bool:
            return any(verdict in json.dumps(since_model(r.body)) for r in api.requests)

        retry_until(lambda: heard("[Plan Approved]"), 60, interval=0.1, what="carol to take the approval")
        assert not heard("[Plan Rejected]")  # Claude Code took it as the answer to the plan it submitted

        outcomes = {o.name: o for o in shutdown(home, TEAM, ["bob", "alice"], env, reason="done", timeout=60)}
        assert outcomes["bob"].result == "approved", outcomes["bob"]
        assert outcomes["alice"].result == "approved", outcomes["alice"]
        assert any(isinstance(f, ShutdownApproved) and f.sender == "bob" for _, f in _lead_frames(home))
        after = TeamStore(home).get(TEAM)
        assert after.member("bob").status == "stopped"  # type: ignore[union-attr]
        # carol's model never answers the request: she is forced down, her pane killed, her clean worktree removed
        (forced,) = shutdown(home, TEAM, ["carol"], env, reason="done", timeout=3)
        assert forced.result == "killed" and forced.worktree is not None and forced.worktree.state == "removed"
        assert not Path(carol.worktree_path or "").exists()
        assert TeamStore(home).get(TEAM).member("carol").status == "killed"  # type: ignore[union-attr]
        panes = subprocess.run(["tmux", "-S", tmux_socket, "list-panes", "-a"], capture_output=True, text=True)
        assert panes.stdout.strip() == ""
        assert _token_processes(tokens) == []
        # nothing went to the user's ~/.claude: Claude Code ran on swarm's own config dir
        assert not (Path(env["HOME"]) / ".claude").exists()
        assert (home.claude_config_dir / "teams").resolve() == home.teams_dir.resolve()
    finally:
        _diagnose(api, tmux_socket, home)  # shown when the test failed
        for pid in _token_processes(tokens):
            kill_tree(pid, 1.0)
    print(f"mixed-team e2e took {time.monotonic() - started:.1f}s ({uuid.uuid4().hex[:4]})")


def test_the_mixed_example_team_runs_headless(tmp_path: Path, api: FakeAnthropicServer, env: dict[str, str],
                                               tmux_socket: str, claude_code: Path) -> None:
    """``swarm up teams.example/mixed/team.toml --headless --offline``: swarm's member on its playbook,
    the Claude Code member on the fake API; the run settles, both report, both shut down."""
    repo = make_sample_repo(tmp_path / "repo")
    api.enqueue(tool_use_reply("ToolSearch", {"query": "select:SendMessage"}, tool_id="toolu_rv_search"),
                after="three most important things")
    api.enqueue(tool_use_reply("SendMessage", {"to": "team-lead", "message": "REVIEW: 1. tests 2. names 3. docs",
                                               "summary": "review"}, tool_id="toolu_rv_send"), after="toolu_rv_search")
    api.enqueue(text_reply("Review sent."), after="toolu_rv_send")
    api.enqueue(ScriptedReply(200, _approve_shutdown("reviewer", "toolu_rv_bye")), after="shutdown_request")
    api.otherwise(text_reply("OK"))
    run_env = {**env, "SWARM_HOME": str(tmp_path / "home"), "SWARM_CLAUDE_BIN": str(claude_code),
               "SWARM_TMUX_SOCKET": tmux_socket}
    done = run_swarm(["up", str(EXAMPLES / "mixed" / "team.toml"), "--headless", "--json", "--offline", "--timeout",
                      "90"], cwd=repo, env=run_env, timeout=150)
    assert done.returncode == 0, f"stdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    report = json.loads(done.stdout)
    assert report["ok"] is True and report["reason"] == "settled", report
    texts = [(m["sender"], m["text"]) for m in report["messages"] if m["kind"] == "message"]
    assert ("reviewer", "REVIEW: 1. tests 2. names 3. docs") in texts
    assert any(sender == "history" and "Recent history" in text for sender, text in texts), texts
    stopped = {m["name"]: m["stopped"] for m in report["members"]}
    assert stopped == {"history": "approved", "reviewer": "approved"}, report["members"]
    panes = subprocess.run(["tmux", "-S", tmux_socket, "list-panes", "-a"], capture_output=True, text=True)
    assert panes.stdout.strip() == ""


def _pending(home: Home) -> list[PermissionEvent]:
    """The desk's pending requests after the CLI's look at the lead's inbox (what Claude Code asked is recorded)."""
    catch_up(home, TEAM)
    return permission_desk.pending(home, TEAM)
