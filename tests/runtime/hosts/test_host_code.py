"""Code across machines: the lead's base commit goes to swarm/<team>/base on a git remote (a bare repository), the
host clones it into the teammate's own work directory on swarm/<team>/<name>, and pushes the teammate's commits
when it goes idle."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from swarm.core.mailbox import Mailbox
from swarm.runtime.hosts.place import place, place_again
from swarm.runtime.restart_policy import read_record, record_file
from swarm.runtime.shutdown import shutdown
from swarm.runtime.spawn import wait_joined
from tests.backends.helpers import retry_until
from tests.runtime.hosts.conftest import HostProc, Site

COMMITTER = r"""
[[rules]]
name = "commit"
match = 'commit (?P<tok>\w+)'
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "echo {tok} > {tok}.txt && git add {tok}.txt && git -c user.name=t -c user.email=t@example.invalid commit -qm 'work {tok}'" } }]
[[rules.steps]]
text = "committed {tok}"
"""


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=True).stdout.strip()


def _branch(remote: Path, branch: str) -> str | None:
    done = subprocess.run(["git", "-C", str(remote), "rev-parse", "--verify", "-q", branch], capture_output=True,
                          text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def test_the_teammates_commits_arrive_as_its_pushed_branch(site: Site, start_host: Callable[..., HostProc]) -> None:
    remote = site.tmp / "remote.git"
    _git(site.tmp, "init", "-q", "--bare", str(remote))
    src = site.tmp / "src"
    src.mkdir()
    _git(src, "init", "-q")
    (src / "README").write_text("base\n")
    _git(src, "add", "README")
    _git(src, "-c", "user.name=l", "-c", "user.email=l@example.invalid", "commit", "-qm", "base")
    base = _git(src, "rev-parse", "HEAD")
    host = start_host("h1")
    book = site.tmp / "book.toml"
    book.write_text(COMMITTER)

    place(site.lead, site.team, "ann", "commit one", host="h1", labels=[], playbook=book,
          permission_mode="bypassPermissions", repo=str(remote), cwd=src)
    wait_joined(site.lead, site.team, ["ann"])
    assert _branch(remote, "swarm/t/base") == base
    retry_until(lambda: _branch(remote, "swarm/t/ann") not in (None, base), 20, interval=0.2,
                what="ann's branch pushed")
    pushed = _branch(remote, "swarm/t/ann")
    assert _git(remote, "log", "-1", "--format=%s", "swarm/t/ann") == "work one"
    assert _git(remote, "rev-parse", "swarm/t/ann^") == base
    work = host.home.root / "work" / "t" / "ann"
    assert _git(work, "rev-parse", "--abbrev-ref", "HEAD") == "swarm/t/ann"
    assert not (src / "one.txt").exists()  # the lead's checkout is untouched: nothing shared but the remote

    Mailbox(site.lead, site.team).send("ann", "commit two", sender="team-lead")
    retry_until(lambda: _branch(remote, "swarm/t/ann") != pushed, 20, interval=0.2, what="the second push")
    assert _git(remote, "log", "--format=%s", "swarm/t/ann").splitlines() == ["work two", "work one", "base"]


def test_a_teammate_placed_again_starts_from_the_branch_it_pushed_not_the_base(
        site: Site, start_host: Callable[..., HostProc]) -> None:
    remote = site.tmp / "remote.git"
    _git(site.tmp, "init", "-q", "--bare", str(remote))
    src = site.tmp / "src"
    src.mkdir()
    _git(src, "init", "-q")
    (src / "README").write_text("base\n")
    _git(src, "add", "README")
    _git(src, "-c", "user.name=l", "-c", "user.email=l@example.invalid", "commit", "-qm", "base")
    _git(src, "remote", "add", "origin", str(remote))  # the team's remote: the lead repository's origin
    host = start_host("h1")
    book = site.tmp / "book.toml"
    book.write_text(COMMITTER)
    place(site.lead, site.team, "ann", "commit one", host="h1", labels=[], playbook=book,
          permission_mode="bypassPermissions", cwd=src, restart="on-failure")
    retry_until(lambda: _branch(remote, "swarm/t/ann") not in (None, _branch(remote, "swarm/t/base")), 20,
                interval=0.2, what="ann's work pushed")
    pushed = _branch(remote, "swarm/t/ann")
    shutdown(site.lead, site.team, ["ann"], {}, timeout=5)
    retry_until(lambda: site.rows.hosts()[0].running == 0, 10, what="the host saw ann end")
    record = read_record(record_file(site.lead, site.team, "ann").read())
    assert record is not None and record.placed is not None and record.placed["host"] == "h1"

    again = place_again(site.lead, site.team, "ann", record.placed)
    assert again.epoch == 2
    work = host.home.root / "work" / "t" / "ann"
    assert _git(work, "rev-parse", "HEAD") == pushed  # its own work, not the base
    assert _branch(remote, "swarm/t/ann") is not None
    assert _git(remote, "log", "--format=%s", "swarm/t/ann").splitlines()[:2] == ["work one", "base"]
