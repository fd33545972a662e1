"""``swarm host serve|key`` and ``swarm hosts``: machines that run teammates for a team in PostgreSQL."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from types import FrameType

import click

from swarm.cli.options import home_of, json_option
from swarm.cli.render import echo, emit_json, table
from swarm.core.clock import ms_to_iso
from swarm.core.names import validate_name
from swarm.core.signing import verify_key_arg
from swarm.core.store import check_store, database, locate, redacted
from swarm.core.store.postgres.hosts import HostRows
from swarm.errors import UsageError
from swarm.runtime.hosts.cleanup import clean_all
from swarm.runtime.hosts.serve import DEAD_AFTER_SECONDS, HEARTBEAT_SECONDS, HostConfig, HostServer
from swarm.runtime.hosts.trust import HostTrust, asked_keys, fingerprint, revoke, trust_fingerprint, trust_key


@click.group()
def host() -> None:
    """Run teammates on this machine for leads elsewhere (`host serve`), or print a lead's key to trust."""


@host.command()
@click.option("--store", "store", envvar="SWARM_STORE", required=True, metavar="URL",
              help="The PostgreSQL database the teams live in (postgresql://…; prefer ~/.pgpass for the password).")
@click.option("--name", required=True, help="This host's name, as `swarm spawn --host NAME` says it.")
@click.option("--labels", default="", metavar="A,B", help="Labels a lead may ask for (`swarm spawn --labels`).")
@click.option("--max-teammates", type=click.IntRange(min=1), default=4, show_default=True)
@click.option("--trust-key", "trust_keys", multiple=True,
              type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="A file of lead keys (as `swarm host key` prints them) whose spawn requests may run here; "
                   "without it, keys are trusted on first use (`swarm host trust`).")
@click.option("--backend", type=click.Choice(["subprocess", "tmux"]), default="subprocess", show_default=True)
@click.option("--tmux-socket", default=None, help="tmux server for --backend tmux (name or path).")
@click.option("--heartbeat", type=click.FloatRange(min=0.1), default=HEARTBEAT_SECONDS, show_default=True,
              help="Seconds between heartbeats.")
@click.option("--dead-after", type=click.FloatRange(min=0.5), default=DEAD_AFTER_SECONDS, show_default=True,
              help="Seconds without a heartbeat after which leads count this host's teammates as dead.")
@click.pass_context
def serve(ctx: click.Context, store: str, name: str, labels: str, max_teammates: int, trust_keys: tuple[Path, ...],
          backend: str, tmux_socket: str | None, heartbeat: float, dead_after: float) -> None:
    """Take signed spawn requests for this host from the database and run the teammates here, until stopped."""
    url = check_store(store)
    if url is None:
        raise UsageError("--store must be a postgresql://… URL: hosts meet their leads in a database")
    validate_name(name, "host name")
    wanted = sorted({label.strip() for label in labels.split(",") if label.strip()})
    for label in wanted:
        validate_name(label, "label")
    home = home_of(ctx)
    trusted = HostTrust(home, list(trust_keys)).read()  # a bad or unsafe trust file is an error now
    if trust_keys and not trusted:
        raise UsageError("the --trust-key files hold no key; put the lead's `swarm host key` line in one")
    config = HostConfig(name=name, url=url, labels=wanted, max_teammates=max_teammates, trust_files=list(trust_keys),
                        backend=backend, tmux_socket=tmux_socket, heartbeat=heartbeat, dead_after=dead_after)
    if dead_after <= heartbeat:
        raise UsageError(f"--dead-after ({dead_after:g}s) must be longer than --heartbeat ({heartbeat:g}s)")
    stop = threading.Event()

    def stopping(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, stopping)
    signal.signal(signal.SIGINT, stopping)
    def ready() -> None:  # registered: the database answered
        echo(f"host {name} serving {redacted(url)} (labels {','.join(wanted) or '-'}, up to {max_teammates} "
             "teammates)")
        if not trusted:
            echo("no lead key is trusted yet: a lead's requests wait until `swarm host trust FINGERPRINT` here")

    HostServer(home, config, dict(os.environ)).serve(stop, ready)


@host.command()
@click.option("--team", "-t", envvar="SWARM_TEAM", required=True, help="Team name.")
@click.option("--fingerprint", "as_fingerprint", is_flag=True,
              help="Print the key's fingerprint instead (what `swarm host trust` on a host lists).")
@click.pass_context
def key(ctx: click.Context, team: str, as_fingerprint: bool) -> None:
    """Print this lead's public key for TEAM: the line a host's --trust-key file holds."""
    line = verify_key_arg(home_of(ctx), validate_name(team, "team name"))
    echo(fingerprint(line) if as_fingerprint else line)


@host.command()
@click.argument("fingerprint_prefix", metavar="[FINGERPRINT]", required=False)
@click.option("--key", "key_line", default=None, metavar="LINE", help="Trust this key line (`swarm host key`).")
@click.option("--revoke", "revoked", default=None, metavar="FINGERPRINT", help="Stop trusting this key.")
@json_option
@click.pass_context
def trust(ctx: click.Context, fingerprint_prefix: str | None, key_line: str | None, revoked: str | None,
          as_json: bool) -> None:
    """Trust a lead key that asked this host to run a teammate (by FINGERPRINT), or list the keys that asked.

    A running `swarm host serve` in this home picks the change up and runs the requests still waiting."""
    home = home_of(ctx)
    if sum(x is not None for x in (fingerprint_prefix, key_line, revoked)) > 1:
        raise UsageError("give one of FINGERPRINT, --key LINE or --revoke FINGERPRINT")
    if revoked is not None:
        echo(f"no longer trusted: {revoke(home, revoked)}")
    elif key_line is not None:
        echo(f"trusted: {trust_key(home, key_line)}")
    elif fingerprint_prefix is not None:
        found, _ = trust_fingerprint(home, fingerprint_prefix)
        echo(f"trusted: {found}")
    else:
        trusted = HostTrust(home).read()
        asked = asked_keys(home)
        if as_json:
            emit_json([{**a.model_dump(), "trusted": a.fingerprint in trusted} for a in asked])
            return
        table(["fingerprint", "team", "lead (claimed)", "first seen", "trusted"],
              [[a.fingerprint, a.team, a.lead, ms_to_iso(a.first_seen_ms), "yes" if a.fingerprint in trusted else "no"]
               for a in asked])


@click.command()
@click.option("--team", "-t", envvar="SWARM_TEAM", default=None, help="A PostgreSQL team: its database's hosts.")
@click.option("--store", default=None, metavar="URL", help="The database's URL (instead of --team).")
@json_option
@click.pass_context
def hosts(ctx: click.Context, team: str | None, store: str | None, as_json: bool) -> None:
    """List the hosts of a database: labels, heartbeat age, load (teammates running / max)."""
    home = home_of(ctx)
    url = check_store(store) if store else (locate(home, validate_name(team, "team name")) if team else None)
    if url is None:
        raise UsageError("say which database: --team NAME (a PostgreSQL team) or --store postgresql://…")
    rows = HostRows(database(home, url)).hosts()
    if as_json:
        emit_json([r.model_dump() for r in rows])
        return
    table(["host", "labels", "heartbeat", "load"],
          [[r.name, ",".join(r.labels) or "-", f"{r.heartbeat_age_s:.1f}s ago" + (" (lost)" if r.lost else ""),
            f"{r.running}/{r.max_teammates}"]
           for r in rows])


@host.command()
@click.option("--dry-run", is_flag=True, help="Only say what would be removed and what is kept.")
@json_option
@click.pass_context
def clean(ctx: click.Context, dry_run: bool, as_json: bool) -> None:
    """Remove this host's work directories of ended teammates whose branch is pushed; keep (and say why) the rest."""
    found = clean_all(home_of(ctx), dry_run=dry_run)
    if as_json:
        emit_json([{"team": c.team, "name": c.name, "work": str(c.work), "removed": c.kept is None and not dry_run,
                    "kept": c.kept} for c in found])
        return
    gone = "would remove" if dry_run else "removed"
    table(["team", "teammate", "work directory", "outcome"],
          [[c.team, c.name, str(c.work), gone if c.kept is None else f"kept: {c.kept}"] for c in found])
