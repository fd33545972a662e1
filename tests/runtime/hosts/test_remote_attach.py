"""`swarm attach` to a teammate on another host says, on one line, what to run on that host: a real host running it
in tmux (on a private server) and one running it as a subprocess; in the host's own home attach goes on as for a
local teammate."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from collections.abc import Callable

import pytest

from swarm.core.teams import TeamStore
from swarm.runtime.hosts.place import place
from swarm.runtime.spawn import wait_joined
from tests.runtime.hosts.conftest import HostProc, Site
from tests.runtime.hosts.test_team_remote import _swarm
from tests.teammate.conftest import PLAYBOOK


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_attach_to_a_remote_teammate_names_its_host_and_the_command_valid_there(
        site: Site, start_host: Callable[..., HostProc], tmux_socket: str) -> None:
    tmux_host = start_host("h1", "--backend", "tmux", "--tmux-socket", tmux_socket)
    start_host("h2")
    book = site.tmp / "mate.toml"
    book.write_text(PLAYBOOK)
    place(site.lead, site.team, "ann", "ping one", host="h1", labels=[], playbook=book)
    place(site.lead, site.team, "bob", "ping two", host="h2", labels=[], playbook=book)
    wait_joined(site.lead, site.team, ["ann", "bob"])
    ann = TeamStore(site.lead).get("t").member("ann")
    assert ann is not None and ann.backend_type == "tmux" and ann.tmux_pane_id  # what the host recorded

    done = _swarm(site.lead, "attach", "ann", "--team", "t", cwd=site.tmp)
    assert done.returncode != 0 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "ann runs on host h1 in tmux" in done.stderr and "`swarm attach ann --team t`" in done.stderr
    line = re.search(r"`(tmux [^`]+)`", done.stderr)
    assert line is not None, done.stderr
    # the line is valid on that host: its server and pane are the ones running ann
    argv = shlex.split(line.group(1))
    assert argv[1:3] == ["-L", tmux_socket] and argv[3:5] == ["attach", "-t"]
    shown = subprocess.run(["tmux", *argv[1:3], "display-message", "-p", "-t", argv[5], "#{pane_pid}"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert int(shown) in [ann.pid, *(p.pid for p in tmux_host.teammate_procs())]

    sub = _swarm(site.lead, "attach", "bob", "--team", "t", cwd=site.tmp)
    assert sub.returncode != 0 and len(sub.stderr.strip().splitlines()) == 1
    assert "bob runs on host h2 as a subprocess" in sub.stderr and "`swarm logs bob -f --team t`" in sub.stderr

    # in the host's own home it is a local pane: attach goes on to tmux (no terminal here, so tmux refuses)
    there = _swarm(tmux_host.home, "attach", "ann", "--team", "t", cwd=site.tmp)
    assert "runs on host" not in there.stderr and "terminal" in there.stderr + there.stdout, there.stderr
