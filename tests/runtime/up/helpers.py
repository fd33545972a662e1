"""Helpers for the ``swarm up`` tests: running the executable, finding what it left running."""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import psutil

from swarm.teammate.served import teammate_processes
from tests.forked import SWARM_EXE, run_swarm

EXAMPLES = Path(__file__).resolve().parents[3] / "teams.example"
RUN_TIMEOUT = 60.0


@dataclass
class Up:
    """One test's swarm home, private tmux socket, sample repo and the processes it launched."""

    home: Path
    socket: str
    repo: Path
    tmp: Path
    env: dict[str, str]
    procs: list[subprocess.Popen[str]] = field(default_factory=list)
    files: list[TextIO] = field(default_factory=list)

    def run(self, *args: str, cwd: Path | None = None,
            timeout: float = RUN_TIMEOUT) -> subprocess.CompletedProcess[str]:
        """Run ``swarm ARGS`` to completion (in the sample repo unless ``cwd``)."""
        return run_swarm(args, cwd=cwd or self.repo, env=self.env, timeout=timeout)

    def popen(self, *args: str, name: str) -> subprocess.Popen[str]:
        """Start ``swarm ARGS`` in the background; stdout/stderr go to ``<tmp>/<name>.out|.err``."""
        out = (self.tmp / f"{name}.out").open("w")
        err = (self.tmp / f"{name}.err").open("w")
        self.files += [out, err]
        proc = subprocess.Popen([str(SWARM_EXE), *args], stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                text=True, cwd=self.repo, env=self.env, start_new_session=True)
        self.procs.append(proc)
        return proc

    def output(self, name: str, stream: str = "out") -> str:
        path = self.tmp / f"{name}.{stream}"
        return path.read_text() if path.exists() else ""

    def config(self, team: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.home / "teams" / team / "config.json").read_text())
        return data

    def git(self, *args: str, cwd: Path | None = None) -> str:
        result = subprocess.run(["git", "-C", str(cwd or self.repo), *args], capture_output=True, text=True,
                                check=False)
        assert result.returncode == 0, f"git {' '.join(args)}: {result.stderr}"
        return result.stdout.strip()


def teammate_pids(home: Path) -> list[int]:
    """Live teammate processes of this home: launchers, forked workers and unserved teammates."""
    return [proc.pid for proc in teammate_processes(str(home))]


def processes_with(marker: str) -> list[int]:
    """Live processes (not zombies) whose command line contains ``marker``."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmd = " ".join(proc.info.get("cmdline") or [])
        if marker in cmd and proc.info.get("status") != psutil.STATUS_ZOMBIE:
            found.append(proc.pid)
    return found


def panes(socket: str, fmt: str = "#{pane_id}") -> list[str]:
    """One line per pane on the private tmux server; [] when the server (or tmux) is gone."""
    try:
        result = subprocess.run(["tmux", "-L", socket, "list-panes", "-a", "-F", fmt], capture_output=True,
                                text=True, check=False, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return result.stdout.split() if result.returncode == 0 else []


def copy_team(example: str, dest: Path, **member_fields: str) -> Path:
    """Copy ``teams.example/<example>/team.toml`` to ``dest`` with absolute playbook paths and extra member fields."""
    source = EXAMPLES / example
    extra = "".join(f'\n{key} = "{value}"' for key, value in member_fields.items())

    def absolute(found: re.Match[str]) -> str:
        return f'playbook = "{(source / found.group(1)).resolve()}"{extra}'

    text, count = re.subn(r'^playbook = "([^"]+)"$', absolute, (source / "team.toml").read_text(), flags=re.M)
    assert count, f"no playbook lines in {source / 'team.toml'}"
    dest.write_text(text)
    return dest


def lines_with(text: str, needle: str) -> list[str]:
    return [line for line in text.splitlines() if needle in line]
