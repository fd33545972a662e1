"""Choosing a team's store from the command line, the environment and a team file; every command then uses it."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from swarm.core.home import Home
from swarm.core.store import locate
from swarm.core.teams import TeamStore
from swarm.errors import UsageError
from swarm.runtime.demo import DEMO_TEAM
from swarm.runtime.spawn import SpawnRequest, spawn
from swarm.runtime.upfile import load_upfile
from tests.fakes import pg_cluster
from tests.forked import run_swarm

pytestmark = pytest.mark.usefixtures("served")  # teammates forked from the home's CLI server (tests.zygote)

psycopg = pytest.importorskip("psycopg")


@pytest.fixture
def url(postgres_url: str) -> str:
    return pg_cluster.fresh_schema(postgres_url)


def test_a_team_created_with_a_store_is_used_by_every_command(home: Home, url: str,
                                                              run_cli: Callable[..., Result]) -> None:
    created = run_cli("team", "create", "pg", "--store", url, "--description", "in the database")
    assert created.exit_code == 0 and "created team pg (postgresql://swarm@127.0.0.1" in created.output
    assert locate(home, "pg") == url and not home.config_path("pg").exists()
    assert [t["name"] for t in json.loads(run_cli("team", "list", "--json").output)] == ["pg"]
    assert json.loads(run_cli("team", "show", "pg", "--json").output)["description"] == "in the database"

    sent = json.loads(run_cli("send", "team-lead", "hello", "--team", "pg", "--json").output)
    assert [e["text"] for e in json.loads(run_cli("inbox", "team-lead", "--team", "pg", "--json").output)] == ["hello"]
    taken = json.loads(run_cli("inbox", "team-lead", "--team", "pg", "--take", "--json").output)
    assert [e["msg_id"] for e in taken] == [sent[0]["msg_id"]]
    assert json.loads(run_cli("inbox", "team-lead", "--team", "pg", "--json").output) == []
    assert not home.inbox_path("pg", "team-lead").exists()

    assert run_cli("task", "add", "write the parser", "--team", "pg").exit_code == 0
    assert run_cli("task", "update", "1", "--status", "completed", "--team", "pg").exit_code == 0
    [task] = json.loads(run_cli("tasks", "--team", "pg", "--json").output)
    assert task["subject"] == "write the parser" and task["status"] == "completed"
    assert not home.tasks_dir("pg").exists()

    assert run_cli("team", "delete", "pg").exit_code == 0
    assert locate(home, "pg") is None and json.loads(run_cli("team", "list", "--json").output) == []


def test_swarm_store_picks_the_store_of_new_teams_and_files_overrides_it(
        home: Home, url: str, run_cli: Callable[..., Result], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWARM_STORE", url)
    assert run_cli("team", "create", "from-env").exit_code == 0
    assert locate(home, "from-env") == url
    assert run_cli("team", "create", "local", "--store", "files").exit_code == 0
    assert locate(home, "local") is None and home.config_path("local").is_file()
    assert [t["name"] for t in json.loads(run_cli("team", "list", "--json").output)] == ["from-env", "local"]
    monkeypatch.setenv("SWARM_STORE", "mysql://u:pw@h/db")
    refused = run_cli("team", "create", "nope")
    assert refused.exit_code != 0 and "store must be 'files' or a postgresql://" in refused.output
    assert "pw@" not in refused.output and locate(home, "nope") is None and not home.config_path("nope").exists()


def test_a_team_file_names_its_store(tmp_path: Path) -> None:
    good = tmp_path / "good.toml"
    good.write_text('[team]\nname = "t"\nstore = "postgresql://db.example/swarm"\n\n[[members]]\nname = "a"\nprompt = "p"\n')
    assert load_upfile(good).team.store == "postgresql://db.example/swarm"
    files = tmp_path / "files.toml"
    files.write_text('[team]\nname = "t"\nstore = "files"\n\n[[members]]\nname = "a"\nprompt = "p"\n')
    assert load_upfile(files).team.store == "files"
    bad = tmp_path / "bad.toml"
    bad.write_text('[team]\nname = "t"\nstore = "redis://u:secret@h"\n\n[[members]]\nname = "a"\nprompt = "p"\n')
    with pytest.raises(UsageError, match="team.store") as caught:
        load_upfile(bad)
    assert "secret" not in str(caught.value)


def test_the_demo_runs_its_whole_team_in_postgresql(url: str) -> None:
    """The model lead's TeamCreate takes SWARM_STORE: tasks with a dependency, claims, the lead policy's
    permission answers, messages between teammates and the shutdown all go through the database."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    done = run_swarm(["demo", "--backend", "subprocess", "--json", "--keep"], env={**env, "SWARM_STORE": url},
                     timeout=180)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout[: done.stdout.rindex("}") + 1])
    kept = Path(re.findall(r"kept: (\S+) ", done.stdout)[0])
    try:
        assert report["ok"] is True and report["reason"] == "settled"
        assert [(t["id"], t["status"], t["owner"]) for t in report["tasks"]] == [
            ("1", "completed", "implementer"), ("2", "completed", "tester")]
        home = Home(kept / "home")
        assert locate(home, DEMO_TEAM) == url and not home.config_path(DEMO_TEAM).exists()
        assert not home.tasks_dir(DEMO_TEAM).exists() and not list(home.inboxes_dir(DEMO_TEAM).glob("*.json"))
        with psycopg.connect(url) as conn:
            decided = conn.execute("SELECT count(*) FROM swarm_permissions WHERE event->>'event' = 'decision'")
            assert decided.fetchone() == (4,)  # the lead policy's four answers, recorded in the database
            members = conn.execute("SELECT doc FROM swarm_teams WHERE team = %s", (DEMO_TEAM,)).fetchone()
            assert members is not None and {m["name"]: m.get("status") for m in members[0]["members"]} == {
                "team-lead": None, "implementer": "stopped", "tester": "stopped"}
    finally:
        shutil.rmtree(kept, ignore_errors=True)


def test_a_claude_code_teammate_is_refused_in_a_database_team_with_nothing_made(home: Home, url: str,
                                                                                tmp_path: Path) -> None:
    TeamStore(home).create("pg", store=url)
    request = SpawnRequest(team="pg", name="cc", prompt="hello", runtime="claude", cwd=tmp_path)
    with pytest.raises(UsageError, match="Claude Code teammate reads and writes files only"):
        spawn(home, request, dict(os.environ))
    assert [m.name for m in TeamStore(home).get("pg").members] == ["team-lead"]
