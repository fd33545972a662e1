"""A CLI server started by a headless or CI run ends within seconds of its last child, for real.

Anything that waits for every descendant of a run (a CI runner, ``timeout``,
``strace -f``) would otherwise wait the interactive idle time (5 minutes) for
the server the run's first teammate started.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from swarm.cli.entry import server_pid
from swarm.cli.forkserver import HEADLESS_IDLE_SECONDS
from swarm.core.home import Home
from swarm.runtime.demo import DEMO_PROMPT
from swarm.runtime.sample_repo import examples_dir, make_sample_repo
from tests.cli.conftest import SWARM_EXE, live_cli_server

ENDS_WITHIN = 8.0
"""Seconds after the run within which its server must be gone: its idle time (2 s), one poll tick (1 s) and
room for a loaded machine; the interactive idle time is 300 s."""


def _env(home: Home, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SWARM_", "ANTHROPIC_")) and k != "CI"}
    return {**env, "SWARM_HOME": str(home.root), "SWARM_CLI_SERVER": "1", **extra}


def test_the_server_a_ci_lead_run_started_ends_seconds_after_it(short_home: Home, tmp_path: Path) -> None:
    repo = make_sample_repo(tmp_path / "repo")
    lead = examples_dir() / "lead"
    done = subprocess.run(
        [str(SWARM_EXE), "run", "-p", DEMO_PROMPT, "--playbook", str(lead / "lead.toml"), "--backend", "subprocess",
         "--teammate-playbook", f"implementer={lead / 'implementer.toml'}",
         "--teammate-playbook", f"tester={lead / 'tester.toml'}",
         "--allow", "Bash(git add:*)", "--allow", "Bash(git commit:*)", "--allow", "Bash(git merge:*)",
         "--allow", "Bash(python3:*)"],
        cwd=repo, env=_env(short_home, CI="1"), capture_output=True, text=True, timeout=120)
    ended = time.monotonic()
    assert done.returncode == 0, done.stderr
    pid = server_pid(short_home.cli_lock_path)
    assert pid is not None, "the run's teammates were not served by a CLI server: nothing to test"
    while live_cli_server(short_home) is not None and time.monotonic() - ended < 30:
        time.sleep(0.1)
    after = time.monotonic() - ended
    assert after < ENDS_WITHIN, f"the server outlived the headless run by {after:.1f}s"
    assert not short_home.cli_socket_path.exists()


def test_an_interactive_server_stays_and_a_ci_one_does_not(short_home: Home) -> None:
    made = subprocess.run([str(SWARM_EXE), "team", "create", "t1"], env=_env(short_home, SWARM_CLI_SERVER="0"),
                          capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    lived = 0.0
    for env, stays in ((_env(short_home, CI="1"), False), (_env(short_home), True)):
        assert subprocess.run([str(SWARM_EXE), "status", "-t", "t1"], env=env, capture_output=True,
                              timeout=60).returncode == 0  # runs here and starts the server
        deadline = time.monotonic() + 30
        while live_cli_server(short_home) is None or not short_home.cli_socket_path.exists():
            assert time.monotonic() < deadline, "no CLI server came up"
            time.sleep(0.05)
        up = time.monotonic()
        if not stays:
            while live_cli_server(short_home) is not None:
                lived = time.monotonic() - up
                assert lived < ENDS_WITHIN, f"the CI server still ran {ENDS_WITHIN}s after it came up"
                time.sleep(0.05)
        else:  # twice as long as the CI one lived, and past its idle time and a poll tick: still there
            time.sleep(max(2 * lived, HEADLESS_IDLE_SECONDS + 2.0))
            assert live_cli_server(short_home) is not None, f"the interactive server ended within {2 * lived:.1f}s"
