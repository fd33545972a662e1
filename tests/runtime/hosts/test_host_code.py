"""Code across machines: the lead's base commit goes to swarm/<team>/base on a git remote (a bare repository), the
host clones it (through one cache per remote) into the teammate's own work directory on swarm/<team>/<name>, pushes
the teammate's commits when it goes idle, and removes the clone once it ended with everything pushed."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from swarm.core.mailbox import Mailbox
from swarm.core.protocol import TeamFile
from swarm.core.teams import TeamStore
from swarm.runtime.hosts.place import place, place_again
from swarm.runtime.restart_policy import read_record, record_file
from swarm.runtime.shutdown import shutdown
from swarm.runtime.spawn import wait_joined
from tests.backends.helpers import retry_until
from tests.forked import run_swarm
from tests.runtime.hosts.conftest import HostProc, Site
from tests.runtime.hosts.test_lead_on_host import _repo

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


def _worktrees(site: Site, cwd: Path) -> list[dict[str, Any]]:
    env = {**os.environ, "SWARM_HOME": str(site.lead.root)}
    env.pop("SWARM_TEAM", None)
    done = run_swarm(["worktrees", "--team", site.team, "--json"], env=env, cwd=cwd, timeout=60, check=True)
    rows: list[dict[str, Any]] = json.loads(done.stdout)
    return rows


def _branch(remote: Path, branch: str) -> str | None:
    done = subprocess.run(["git", "-C", str(remote), "rev-parse", "--verify", "-q", branch], capture_output=True,
                          text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


def test_the_teammates_commits_arrive_as_its_pushed_branch(site: Site, start_host: Callable[..., HostProc]) -> None:
    remote, src = _repo(site)
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

    # the lead's `swarm worktrees` shows ann's branch as the remote has it (not the host's disk), in or out of a repo
    pushed = _branch(remote, "swarm/t/ann")
    for cwd in (src, site.tmp):
        [row] = [r for r in _worktrees(site, cwd) if r["teammate"] == "ann"]
        assert (row["host"], row["ahead"], row["files_changed"], row["pushed"], row["base"], row["state"]) == (
            "h1", 2, 2, pushed, base, "live"), row
    assert _git(src, "rev-parse", "refs/swarm-remote/t/ann") == pushed
    env = {**os.environ, "SWARM_HOME": str(site.lead.root)}
    text = run_swarm(["worktrees", "--team", "t"], env=env, cwd=src, timeout=60, check=True).stdout
    assert f"on h1; pushed {pushed[:10]}, 2 file(s) changed" in text and "swarm/t/ann" in text
    assert _git(src, "branch", "--list").split() == ["*", _git(src, "branch", "--show-current")]  # no branch added

    def hostile(team: TeamFile) -> None:  # whoever can write the team's entry cannot make the lead run a program
        member = team.member("ann")
        assert member is not None
        member.remote_repo = f"--upload-pack=touch {site.tmp / 'pwned'}"

    TeamStore(site.lead).modify(site.team, hostile)
    [row] = [r for r in _worktrees(site, src) if r["teammate"] == "ann"]
    assert "is not a git remote" in row["error"] and not (site.tmp / "pwned").exists()


DIRTY = r"""
[[rules]]
name = "dirty"
match = 'dirty (?P<tok>\w+)'
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "echo {tok} > {tok}.txt" } }]
[[rules.steps]]
text = "left {tok} uncommitted"
"""


def _objects(repo: Path) -> set[str]:
    return set(_git(repo, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)").split())


def _own_objects(repo: Path) -> int:
    """How many objects ``repo`` stores itself (not those it borrows through alternates)."""
    counts = dict(line.split(": ") for line in _git(repo, "count-objects", "-v").splitlines())
    return int(counts["count"]) + int(counts["in-pack"])


def test_one_cache_per_remote_and_pushed_clones_removed_unpushed_kept(
        site: Site, start_host: Callable[..., HostProc]) -> None:
    remote, src = _repo(site)
    host = start_host("h1")
    book = site.tmp / "book.toml"
    book.write_text(COMMITTER + DIRTY)

    place(site.lead, site.team, "ann", "commit one", host="h1", labels=[], playbook=book,
          permission_mode="bypassPermissions", repo=str(remote), cwd=src)
    retry_until(lambda: _branch(remote, "swarm/t/ann") is not None, 20, interval=0.2, what="ann's branch pushed")
    [cache] = list((host.home.root / "hosts" / "cache").glob("*.git"))
    first = _objects(cache)
    ann_work = host.home.root / "work" / "t" / "ann"
    assert (ann_work / ".git" / "objects" / "info" / "alternates").read_text().strip() == str(cache / "objects")

    # the lead moves on; a second teammate of the same remote: the same cache, fetched for what is new only
    (src / "NEXT").write_text("next\n")
    _git(src, "add", "NEXT")
    _git(src, "-c", "user.name=l", "-c", "user.email=l@example.invalid", "commit", "-qm", "next")
    next_base = _git(src, "rev-parse", "HEAD")
    place(site.lead, site.team, "bob", "dirty two", host="h1", labels=[], playbook=book,
          permission_mode="bypassPermissions", repo=str(remote), cwd=src)
    bob_work = host.home.root / "work" / "t" / "bob"
    assert list((host.home.root / "hosts" / "cache").glob("*.git")) == [cache]
    assert _git(bob_work, "rev-parse", "HEAD") == next_base  # the remote's new commit, seen through the cache
    second = _objects(cache)
    assert first <= second and len(second - first) == 3 + 3  # ann's pushed commit and the next base: 3 objects each
    assert _own_objects(bob_work) == 0  # bob's clone borrows every object from the cache
    retry_until(lambda: (bob_work / "two.txt").exists(), 20, what="bob's uncommitted file")

    # both end: ann's clone (pushed, clean) goes; bob's (an uncommitted file) stays, and the host says why
    outcomes = shutdown(site.lead, site.team, ["ann", "bob"], dict(os.environ), timeout=15)
    assert {o.result for o in outcomes} == {"approved"}
    retry_until(lambda: not ann_work.exists(), 20, what="ann's pushed clone removed")
    retry_until(lambda: "kept bob@t's work directory" in host.log.read_text(), 20, what="bob's clone kept")
    assert (bob_work / "two.txt").read_text() == "two\n"
    assert "1 uncommitted change(s)" in host.log.read_text()
    assert cache.is_dir()

    # `swarm host clean`: a clone with a commit the remote does not have is kept too; --dry-run removes nothing
    ghost = host.home.root / "work" / "t" / "ghost"
    _git(site.tmp, "clone", "-q", str(remote), str(ghost))
    _git(ghost, "checkout", "-q", "-b", "swarm/t/ghost", "origin/swarm/t/base")
    _git(ghost, "-c", "user.name=g", "-c", "user.email=g@example.invalid", "commit", "-q", "--allow-empty", "-m", "x")
    env = {**os.environ, "SWARM_HOME": str(host.home.root)}
    listed = run_swarm(["host", "clean", "--json"], env=env, timeout=60, check=True)
    kept = {row["name"]: row["kept"] for row in json.loads(listed.stdout)}
    assert kept["bob"] == "1 uncommitted change(s)" and "is not what the remote has" in kept["ghost"]
    assert ghost.is_dir() and bob_work.is_dir()


def test_a_teammate_placed_again_starts_from_the_branch_it_pushed_not_the_base(
        site: Site, start_host: Callable[..., HostProc]) -> None:
    remote, src = _repo(site)
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
