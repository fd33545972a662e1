"""A team across three "machines": network namespaces joined to this one by veth links (tests/fakes/netns.py).

Each box runs its own `swarm host serve` in its own home and work directory, and reaches the team's PostgreSQL
server (this test's own cluster) and a `git daemon` remote only over its link. In the root namespace the person
creates the team (`swarm team create --store --repo`) and gives the hosts its key (`swarm host key`); a scripted
lead model then runs the team to the end through a real main session (``run_lead``, as `swarm run` does): it writes
the task list and places one teammate on each host with ``Agent(host=…)``. The teammates claim tasks, commit, and
their work arrives as pushed branches. One box's link goes down mid-task: its teammate is marked dead, the lead told
once, the task released; the lead gives it to another teammate, who does it; when the link comes back the cut-off
teammate stops without committing or sending anything. PostgreSQL restarts while the lead hands out the next tasks:
each message is delivered and read once, every host outlives it, and the run settles and shuts the team down.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import psycopg
import pytest

from swarm.agent.definitions import load_agents
from swarm.agent.headless import MainOptions, MainSession
from swarm.agent.limits import Limits
from swarm.agent.tools.team_tools import team_tools
from swarm.core.frames import TeammateTerminated, parse_frame
from swarm.core.home import Home
from swarm.core.store import database
from swarm.core.store.postgres.hosts import HostRows
from swarm.core.tasks import TaskStore
from swarm.core.teams import TeamStore
from swarm.models.scripted import ScriptedProvider
from swarm.runtime.lead import LeadOutcome, LeadTeam, run_lead
from swarm.runtime.status import team_status
from tests.backends.helpers import retry_until
from tests.fakes import netns, pg_cluster
from tests.forked import run_swarm
from tests.runtime.hosts.conftest import SWARM_EXE

TEAM = "t"
NAMES = ("ann", "bob", "cat")
HEARTBEAT = "0.3"
DEAD_AFTER = ("10", "10", "2")
"""Per host: h2, the one cut off, is judged fast; the others have room for a loaded CI machine's stalls."""


def _tool(tool: str, **args: str) -> str:
    """One tool call of a playbook step (TOML inline table)."""
    fields = ", ".join(f"{key} = {json.dumps(value)}" for key, value in args.items())
    return f"{{ name = {json.dumps(tool)}, input = {{ {fields} }} }}"


def _steps(*steps: list[str], text: str) -> str:
    calls = "".join(f"[[rules.steps]]\ntool_calls = [{', '.join(step)}]\n" for step in steps)
    return f"{calls}[[rules.steps]]\ntext = {json.dumps(text)}\n"


def _task(n: int) -> str:
    return _tool("TaskCreate", subject=f"part {n}", description=f"part {n} of the work")


def _tell(who: str, what: str) -> str:
    return _tool("SendMessage", to=who, message=what, summary=what)


LEAD = "\n".join([
    "[default]\ntext = \"noted\"",
    "[[rules]]\nname = \"start\"\non = \"prompt\"\nmatch = 'run the team'",
    _steps([_task(1), _task(2), _task(3)],
           [_tool("Agent", description="worker", name=name, team_name=TEAM, prompt=first, host=f"h{n}",
                  mode="bypassPermissions")
            for n, (name, first) in enumerate(zip(NAMES, ("do task 1", "do task 2", "slow task 3"), strict=True))],
           text="placed"),
    "[[rules]]\nname = \"reassign\"\nmatch = 'host h2 stopped heartbeating'",  # the notice that cat is dead
    _steps([_tell("ann", "do task 3")], text="gave task 3 to ann"),
    "[[rules]]\nname = \"more\"\nmatch = 'done 3 by ann'",
    _steps([_task(4), _task(5)], [_tell("ann", "do task 4"), _tell("bob", "do task 5")], text="handed out 4, 5"),
    "[[rules]]\nname = \"last\"\nmatch = 'done 5 by bob'",
    _steps([_task(6)], [_tell("bob", "do task 6")], text="handed out 6"),
])
"""The lead model's playbook: it writes the task list, places one teammate on each host (``Agent(host=…)``), gives
a dead teammate's task to another, hands out the next tasks as work comes back; then the run settles and ends."""
WORKER = r"""
[[rules]]
name = "slow"
match = 'slow task (?P<id>\d+)'
[[rules.steps]]
tool_calls = [{ name = "TaskUpdate", input = { taskId = "{id}", status = "in_progress" } }]
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "sleep 6" } }]
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "echo {id} >> work.log && git add work.log && git -c user.name={agent_name} -c user.email=x@example.invalid commit -qm 'task {id}'" } }]
[[rules.steps]]
tool_calls = [{ name = "SendMessage", input = { to = "team-lead", message = "done {id} by {agent_name}", summary = "done" } }]
[[rules.steps]]
text = "finished {id}"

[[rules]]
name = "task"
match = 'do task (?P<id>\d+)'
[[rules.steps]]
tool_calls = [{ name = "TaskUpdate", input = { taskId = "{id}", status = "in_progress" } }]
[[rules.steps]]
tool_calls = [{ name = "Bash", input = { command = "echo {id} >> work.log && git add work.log && git -c user.name={agent_name} -c user.email=x@example.invalid commit -qm 'task {id}'" } }]
[[rules.steps]]
tool_calls = [{ name = "TaskUpdate", input = { taskId = "{id}", status = "completed" } }]
[[rules.steps]]
tool_calls = [{ name = "SendMessage", input = { to = "team-lead", message = "done {id} by {agent_name}", summary = "done" } }]
[[rules.steps]]
text = "finished {id}"
"""
"""A commit appends to work.log: a task done twice would be two commits."""


@dataclass
class Machines:
    nets: netns.Namespaces
    cluster: Path
    url: str
    remote: Path
    repo: str
    lead: Home
    src: Path
    hosts: list[tuple[netns.Box, Home, subprocess.Popen[bytes]]]
    book: Path
    logs: list[Path]

    @property
    def rows(self) -> HostRows:
        return HostRows(database(self.lead, self.url))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _swarm(lead: Home, *args: str) -> str:
    """Run a `swarm` command as the lead (its home); its output."""
    env = {**os.environ, "SWARM_HOME": str(lead.root)}
    env.pop("SWARM_TEAM", None)
    done = run_swarm(args, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _git(cwd: Path, *args: str, check: bool = True) -> str:
    done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, check=check)
    return done.stdout.strip()


@pytest.fixture(scope="module")
def machines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Machines]:
    why = netns.unavailable()
    if why is not None:
        pytest.skip(f"needs network namespaces: {why}")
    tmp = tmp_path_factory.mktemp("machines")
    procs: list[subprocess.Popen[bytes]] = []
    cluster: Path | None = None
    with netns.Namespaces(3) as nets:
        try:
            cluster, local_url = pg_cluster.start(listen=(nets.server,), allow=nets.subnet)
            url = local_url.replace("127.0.0.1", nets.server)
            with psycopg.connect(url, autocommit=True) as conn:  # a box cut off mid-transaction holds no lock long
                conn.execute("ALTER DATABASE swarm SET idle_in_transaction_session_timeout = '3s'")
            base = tmp / "git"
            remote = base / "team.git"
            remote.parent.mkdir()
            _git(tmp, "init", "-q", "--bare", str(remote))
            port = _free_port()
            procs.append(subprocess.Popen(["git", "daemon", "--reuseaddr", f"--base-path={base}", "--export-all",
                                           "--enable=receive-pack", f"--listen={nets.server}", f"--port={port}",
                                           str(base)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            repo = f"git://{nets.server}:{port}/team.git"
            retry_until(lambda: subprocess.run(["git", "ls-remote", repo], capture_output=True).returncode == 0, 10,
                        interval=0.1, what="git daemon up")
            src = tmp / "src"
            src.mkdir()
            _git(src, "init", "-q")
            (src / "README").write_text("base\n")
            _git(src, "add", "README")
            _git(src, "-c", "user.name=l", "-c", "user.email=l@example.invalid", "commit", "-qm", "base")
            lead = Home(tmp / "lead")
            _swarm(lead, "team", "create", TEAM, "--store", url, "--repo", repo)  # the person: the team, its key
            key = _swarm(lead, "host", "key", "--team", TEAM)
            book = tmp / "worker.toml"
            book.write_text(WORKER)
            hosts = []
            for box in nets.boxes:
                home = Home(tmp / f"h{box.index}")  # nothing shared with the lead or another box but the links
                home.root.mkdir(parents=True)
                trust = home.root / "trusted.keys"
                trust.write_text(key + "\n")
                env = {**os.environ, "SWARM_HOME": str(home.root)}
                env.pop("SWARM_TEAM", None)
                with open(tmp / f"h{box.index}.log", "wb") as out:
                    proc = nets.popen(box, [str(SWARM_EXE), "-v", "host", "serve", "--store", url, "--name",
                                            f"h{box.index}", "--trust-key", str(trust), "--heartbeat", HEARTBEAT,
                                            "--dead-after", DEAD_AFTER[box.index]], env=env, stdout=out,
                                      stderr=subprocess.STDOUT, cwd=home.root)
                procs.append(proc)
                hosts.append((box, home, proc))
            logs = [tmp / f"h{box.index}.log" for box in nets.boxes]
            machines = Machines(nets, cluster, url, remote, repo, lead, src, hosts, book, logs)
            retry_until(lambda: len(machines.rows.hosts()) == 3, 30, interval=0.1, what="three hosts registered")
            yield machines
        finally:
            for proc in reversed(procs):  # the hosts first: each stops its teammates
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
            for proc in reversed(procs):
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(5)
            nets.close()  # whatever still runs inside a box
            if cluster is not None:
                pg_cluster.stop(cluster)


def _run_lead(m: Machines, outcome: list[LeadOutcome]) -> None:
    """A scripted lead model running the team to the end through a real main session (``run_lead``)."""
    book = m.lead.root / "lead.toml"
    book.write_text(LEAD)
    env = {**os.environ, "SWARM_HOME": str(m.lead.root)}
    lead = LeadTeam(m.lead, env, m.src, backend="subprocess", ceiling="bypassPermissions",
                    playbooks={name: m.book for name in NAMES})
    main = MainOptions(catalog=load_agents(m.src, env=env), env=env, make_provider=lambda model: ScriptedProvider(),
                       agents_dir=m.lead.root / "runs")
    session = MainSession(ScriptedProvider(book), cwd=m.src, limits=Limits(max_turns=50), main=main,
                          transcript=m.lead.root / "lead.jsonl", extra_tools=team_tools(lead), team_control=lead)
    try:
        lead.adopt(TEAM, session.ctx)  # the person created the team (and gave the hosts its key); the model leads it
        outcome.append(run_lead(session, lead, "run the team", timeout=150, shutdown_timeout=20))
    finally:
        session.close()


def _owner(tasks: TaskStore, task_id: str) -> str | None:
    """Task ``task_id``'s owner (None while it does not exist yet: the lead model writes the list)."""
    found = [t for t in tasks.list() if t.id == task_id]
    return found[0].owner if found else None


def _texts(m: Machines) -> list[str]:
    """Every message sent to the lead, delivered or not (the lead model's loop takes them as they come)."""
    with psycopg.connect(m.url, autocommit=True) as conn:
        rows = conn.execute("SELECT entry FROM swarm_inbox WHERE team = %s AND agent = %s ORDER BY id",
                            (TEAM, "team-lead")).fetchall()
    return [str((json.loads(entry) if isinstance(entry, str) else entry)["text"]) for (entry,) in rows]


def _lead_saw(m: Machines) -> str:
    """What the lead model was given in its turns (its transcript's user messages)."""
    seen = []
    for line in (m.lead.root / "lead.jsonl").read_text().splitlines():
        message = json.loads(line).get("message", {})
        if message.get("role") == "user" and isinstance(message.get("content"), list):
            seen += [str(b.get("text", "")) for b in message["content"] if b.get("type") == "text"]
    return "\n".join(seen)


def _state(m: Machines, name: str) -> str:
    return {r.name: r.state for r in team_status(m.lead, TEAM)}[name]


def _branch(m: Machines, name: str) -> list[str]:
    """The subjects of the commits on ``name``'s pushed branch after the base (newest first)."""
    ref = f"swarm/{TEAM}/{name}"
    if not _git(m.remote, "rev-parse", "--verify", "-q", ref, check=False):
        return []
    return _git(m.remote, "log", "--format=%s", f"swarm/{TEAM}/base..{ref}").splitlines()


def _work_done(m: Machines) -> Counter[str]:
    """How many times each task's commit is on the pushed branches, all teammates together."""
    return Counter(subject for name in NAMES for subject in _branch(m, name))


def _connections(m: Machines, addresses: list[str]) -> list[int]:
    """How many sessions the server has from each of ``addresses``."""
    with psycopg.connect(m.url, autocommit=True) as conn:
        rows = conn.execute("SELECT host(client_addr), count(*) FROM pg_stat_activity WHERE client_addr IS NOT NULL "
                            "GROUP BY 1").fetchall()
    counts = {str(addr): int(n) for addr, n in rows}
    return [counts.get(a, 0) for a in addresses]


def _teammates_in(m: Machines, box: netns.Box) -> list[int]:
    """The teammate processes running inside ``box``."""
    found = []
    for pid in m.nets.pids(box):
        try:
            if "_teammate" in psutil.Process(pid).cmdline():
                found.append(pid)
        except psutil.NoSuchProcess:
            pass
    return found


def test_a_team_across_three_machines_survives_a_partition_and_a_database_restart(machines: Machines) -> None:
    m = machines
    began = time.monotonic()
    outcome: list[LeadOutcome] = []
    leading = threading.Thread(target=_run_lead, args=(m, outcome), daemon=True)  # the lead model, to the end
    leading.start()
    tasks = TaskStore(m.lead, TEAM)
    retry_until(lambda: {"done 1 by ann", "done 2 by bob"} <= set(_texts(m)), 40, interval=0.1, what="tasks 1, 2")
    members = {member.name: member for member in TeamStore(m.lead).get(TEAM).members}
    assert [members[n].host for n in NAMES] == ["h0", "h1", "h2"]  # placed by the lead model, one on each host
    # one LISTEN session per box (its host's relay): a host holds 3 connections, a teammate there 2 (measured)
    assert all(n <= 3 + 2 for n in _connections(m, [box.addr for box, _, _ in m.hosts]))
    retry_until(lambda: _owner(tasks, "3") == "cat", 10, interval=0.1, what="cat's claim of task 3")
    claimed = time.monotonic()
    assert _teammates_in(m, m.hosts[2][0]), "cat's process is not seen in its box"  # (so its absence later counts)
    retry_until(lambda: _branch(m, "ann") == ["task 1"] and _branch(m, "bob") == ["task 2"], 20, interval=0.1,
                what="ann's and bob's branches pushed")

    # -- a partition: cat's box is cut off mid-task -----------------------------------------------------------------
    box, cat_home, _ = m.hosts[2]
    m.nets.link_down(box)
    cut = time.monotonic()
    try:
        retry_until(lambda: _state(m, "cat") == "dead", 15, interval=0.1, what="cat marked dead")
        assert time.monotonic() - cut < 2 + 4  # h2's --dead-after 2, and a status check's period
        # released: the lead model, told, gives it to ann, whose claim would be refused while cat held it
        retry_until(lambda: "done 3 by ann" in _texts(m), 20, interval=0.1, what="ann's task 3")
        assert tasks.get("3").owner == "ann" and tasks.get("3").status == "completed"
        listed = {line.split()[0]: line for line in _swarm(m.lead, "hosts", "--team", TEAM).splitlines()[1:]}
        assert "(lost)" in listed["h2"] and "(lost)" not in listed["h0"] + listed["h1"]  # what the person sees
        time.sleep(max(0.0, claimed + 7 - time.monotonic()))  # cat's sleep is over: it tries to go on, cut off
    finally:
        m.nets.link_up(box)

    # -- PostgreSQL restarts while the lead hands out the next tasks --------------------------------------------------
    retry_until(lambda: len(tasks.list()) >= 5, 20, interval=0.05, what="the lead's tasks 4 and 5")
    pg_cluster.pg_ctl(m.cluster, "restart")  # its messages to ann and bob, and their answers, go around it
    retry_until(lambda: {"done 4 by ann", "done 5 by bob", "done 6 by bob"} <= set(_texts(m)), 40, interval=0.1,
                what="tasks 4, 5, 6 across the restart")
    assert [proc.poll() for _, _, proc in m.hosts] == [None, None, None]  # every host outlived the restart
    leading.join(60)  # the run settles; the lead shuts its team down
    [ended] = outcome
    assert ended.reason == "done" and ended.report is not None and ended.report.ok, ended

    retry_until(lambda: _teammates_in(m, m.hosts[2][0]) == [], 20, interval=0.1, what="cat gone from its box")
    retry_until(lambda: not [h for h in m.rows.hosts() if h.name == "h2"][0].lost, 20, interval=0.1,
                what="h2 heartbeats again")  # (its connections come back at TCP's next retransmission)
    retry_until(lambda: len(_branch(m, "ann")) == 3 and len(_branch(m, "bob")) == 3, 20, interval=0.1,
                what="ann's and bob's last pushes")
    # nothing ran twice: each task's commit once on the remote, none from cat (not even in its clone), each answer
    # once, and the lead told of cat's end once
    assert _work_done(m) == Counter({f"task {n}": 1 for n in range(1, 7)})
    assert _branch(m, "ann") == ["task 4", "task 3", "task 1"] and _branch(m, "bob") == ["task 6", "task 5", "task 2"]
    assert _git(cat_home.root / "work" / TEAM / "cat", "log", "--format=%s", "-1") == "base"
    texts = _texts(m)
    assert not any("by cat" in t for t in texts)
    saw = _lead_saw(m)
    for n, who in ((1, "ann"), (2, "bob"), (3, "ann"), (4, "ann"), (5, "bob"), (6, "bob")):
        assert texts.count(f"done {n} by {who}") == 1 and saw.count(f"done {n} by {who}") == 1  # sent, read once
    assert saw.count("its host h2 stopped heartbeating") == 1
    notices = [f for f in map(parse_frame, texts) if isinstance(f, TeammateTerminated) and "cat" in f.message]
    assert len(notices) == 1 and "h2" in notices[0].message
    cat = TeamStore(m.lead).get(TEAM).member("cat")
    assert cat is not None and cat.status == "dead"  # it wrote nothing on its way out
    stopped_by = ("fenced: it was declared dead" in cat_home.log_path(TEAM, "cat").read_text(),
                  "cat@t was declared dead meanwhile: stopping it" in m.logs[2].read_text())
    assert any(stopped_by)  # its own fence, or its host back (whichever read the entry first)
    assert [t.status for t in tasks.list()] == ["completed"] * 6
    assert time.monotonic() - began < 120
