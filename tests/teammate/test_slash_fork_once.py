"""A person's ``/skill`` command whose skill forks runs its subagent at most once, even across a kill -9.

A forked skill acts (its subagent runs Bash) while the command is being
expanded, before the message is recorded as delivered. Killed there, the
teammate finds the message in its inbox again when it is spawned anew; the
fork must not run a second time. The second delivery says it was cut short,
as a tool call cut short is answered. A real teammate process, a real skill,
a real SIGKILL of it and of the fork's command.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

import psutil

from swarm.agent.transcript import Transcript
from swarm.backends.procs import is_pid_alive
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import Member
from swarm.teammate.session import FORK_CUT_SHORT
from tests.backends.helpers import retry_until
from tests.teammate.conftest import lead_texts


def _kill_hard(pid: int) -> None:
    """SIGKILL the teammate and everything it started (the fork's Bash command too)."""
    tree = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    for proc in tree:
        os.kill(proc.pid, signal.SIGKILL)
    psutil.wait_procs(tree, timeout=10)


def test_a_forked_slash_command_cut_short_by_a_kill_is_not_run_again(
        home: Home, team: str, workdir: Path, start: Callable[..., Member]) -> None:
    folder = workdir / ".claude" / "skills" / "slowjob"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\ndescription: runs the slow job\ncontext: fork\n---\nRun the slow job $0.\n")
    forks = workdir / "runs.txt"  # the playbook's "slow job" rule: echo alpha >> runs.txt; sleep 30
    member = start("w", "/slowjob alpha", allowed_tools=["Bash"])
    retry_until(lambda: forks.exists() and forks.read_text() == "alpha\n", 20, what="the fork's command to start")
    assert member.pid is not None
    _kill_hard(member.pid)
    retry_until(lambda: not is_pid_alive(member.pid or 0), 10, what="the teammate gone")
    assert any("/slowjob alpha" in e.text for e in Mailbox(home, team).read("w"))  # never recorded: still there

    start("w", "ping again", allowed_tools=["Bash"])
    retry_until(lambda: "pong again from w" in lead_texts(home, team), 30, what="the new process to answer")
    assert forks.read_text() == "alpha\n"  # the fork did not run a second time
    transcript = Transcript(home.transcript_path(team, "w"))
    told = [m.text() for m in transcript.messages() if m.role == "user" and FORK_CUT_SHORT in m.text()]
    assert len(told) == 1 and "/slowjob alpha" in told[0]  # the model hears the command and that it was cut short
    assert len(transcript.events("slash_fork")) == 1
