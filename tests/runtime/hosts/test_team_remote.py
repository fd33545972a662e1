"""The team's git remote (``hosts.code.team_remote``): recorded at `swarm team create --repo` or `[team] repo` in either
store, else the lead repository's origin; and `swarm up` members with ``host``/``labels``, placed on a real host."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from swarm.core.home import Home
from swarm.core.teams import TeamStore
from swarm.errors import UsageError
from swarm.runtime.hosts.place import place
from swarm.runtime.upfile import load_upfile
from tests.backends.helpers import retry_until
from tests.forked import run_swarm
from tests.runtime.hosts.conftest import HostProc, Site
from tests.runtime.hosts.test_hosts import _texts
from tests.runtime.hosts.test_lead_on_host import _git, _repo
from tests.teammate.conftest import PLAYBOOK

pytestmark = pytest.mark.usefixtures("served")  # teammates forked from the home's CLI server (tests.zygote)


def _swarm(home: Home, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SWARM_HOME": str(home.root)}
    env.pop("SWARM_TEAM", None)
    env.pop("SWARM_STORE", None)
    return run_swarm(args, env=env, cwd=cwd, timeout=60)


def test_team_create_records_the_remote_in_both_stores_and_refuses_one_git_would_read_as_an_option(
        site: Site) -> None:
    home = Home(site.tmp / "other")
    for team, store in (("files", []), ("pg", ["--store", site.url])):
        done = _swarm(home, "team", "create", team, *store, "--repo", "git@forge.example:x/y.git", cwd=site.tmp)
        assert done.returncode == 0, done.stderr
        assert TeamStore(home).get(team).repo == "git@forge.example:x/y.git"
    bad = _swarm(home, "team", "create", "evil", "--repo", "--upload-pack=touch /tmp/pwned", cwd=site.tmp)
    assert bad.returncode != 0 and "is not a git remote" in bad.stderr and len(bad.stderr.splitlines()) == 1
    assert not TeamStore(home).exists("evil")
    done = _swarm(home, "team", "create", "tok", "--repo", "https://me:ghp_SeCrEt@forge.example/x.git", cwd=site.tmp)
    assert done.returncode == 0, done.stderr
    shown = _swarm(home, "team", "show", "tok", "--json", cwd=site.tmp)
    assert shown.returncode == 0 and "ghp_SeCrEt" not in shown.stdout + done.stdout + done.stderr
    assert json.loads(shown.stdout)["repo"] == "https://***@forge.example/x.git"


def test_without_a_recorded_remote_a_placement_uses_the_lead_repositorys_origin(
        site: Site, start_host: Callable[..., HostProc]) -> None:
    remote, src = _repo(site)
    _git(src, "remote", "add", "origin", str(remote))
    host = start_host("h1")
    book = site.tmp / "mate.toml"
    book.write_text(PLAYBOOK)
    place(site.lead, site.team, "ann", "ping one", host="h1", labels=[], playbook=book, cwd=src)
    assert _git(remote, "rev-parse", "swarm/t/base") == _git(src, "rev-parse", "HEAD")
    work = host.home.root / "work" / "t" / "ann"
    assert _git(work, "rev-parse", "--abbrev-ref", "HEAD") == "swarm/t/ann"

    # a recorded remote wins over origin
    other = site.tmp / "other.git"
    _git(site.tmp, "init", "-q", "--bare", str(other))
    TeamStore(site.lead).modify("t", lambda t: setattr(t, "repo", str(other)))
    place(site.lead, site.team, "bob", "ping two", host="h1", labels=[], playbook=book, cwd=src)
    assert _git(other, "rev-parse", "swarm/t/base") == _git(src, "rev-parse", "HEAD")


UP = """
[team]
name = "t"
store = "{url}"
repo = "{repo}"

[[members]]
name = "ann"
prompt = "ping one"
playbook = "{book}"
labels = ["gpu"]

[[members]]
name = "loc"
prompt = "ping two"
playbook = "{book}"
backend = "subprocess"
"""


def test_swarm_up_places_members_with_host_or_labels_and_status_shows_their_host(
        site: Site, start_host: Callable[..., HostProc]) -> None:
    remote, src = _repo(site)
    host = start_host("h1", "--labels", "gpu,big")
    book = site.tmp / "mate.toml"
    book.write_text(PLAYBOOK)
    spec = site.tmp / "team.toml"
    spec.write_text(UP.format(url=site.url, repo=remote, book=book))
    done = _swarm(site.lead, "up", "--detach", "--offline", str(spec), cwd=src)
    try:
        assert done.returncode == 0, done.stderr
        assert TeamStore(site.lead).get("t").repo == str(remote)
        ann = TeamStore(site.lead).get("t").member("ann")
        assert ann is not None and ann.host == "h1"
        assert [p for p in host.teammate_procs() if p.pid == ann.pid]  # runs on the host, not here
        retry_until(lambda: {"pong one from ann", "pong two from loc"} <= set(_texts(site)), 20, what="both pongs")
        assert _git(host.home.root / "work" / "t" / "ann", "rev-parse", "HEAD") == _git(src, "rev-parse", "HEAD")
        status = _swarm(site.lead, "status", "--team", "t", cwd=src)
        [ann_row] = [line for line in status.stdout.splitlines() if line.startswith("ann ")]
        [loc_row] = [line for line in status.stdout.splitlines() if line.startswith("loc ")]
        assert " h1 " in ann_row and " local " in loc_row
    finally:
        _swarm(site.lead, "down", "t", "--timeout", "5", cwd=src)


@pytest.mark.parametrize("extra, why", [
    ('host = "h1"\nworktree = true', "worktree not supported yet for a member on a host"),
    ('labels = ["gpu"]\nruntime = "claude"', "runtime not supported yet"),
    ('host = "../x"', "host name"),
])
def test_a_member_on_a_host_with_what_a_host_cannot_carry_is_refused(tmp_path: Path, extra: str, why: str) -> None:
    spec = tmp_path / "team.toml"
    spec.write_text(f'[team]\nname = "t"\n\n[[members]]\nname = "ann"\nprompt = "p"\n{extra}\n')
    with pytest.raises(UsageError, match=why):
        load_upfile(spec)
