"""``swarm send`` and ``swarm inbox``."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import click

from swarm.cli.options import agent_name_callback, home_of, json_option, team_option
from swarm.cli.render import echo, emit_json, json_line, one_line, table, write_out
from swarm.core.mailbox import Mailbox, delivery_key
from swarm.core.names import BROADCAST, LEAD_NAME
from swarm.core.protocol import InboxEntry, command_author
from swarm.core.teams import TeamStore
from swarm.core.text import visible
from swarm.errors import NotFoundError


def _recipient(ctx: click.Context, param: click.Parameter, value: str) -> str:
    return value if value == BROADCAST else agent_name_callback(ctx, param, value)


@click.command()
@click.argument("name", callback=_recipient)
@click.argument("message")
@team_option
@click.option("--from", "sender", default=LEAD_NAME, show_default=True, callback=agent_name_callback,
              help="Sender; must be a member of the team.")
@click.option("--summary", "-s", default=None, help="5-10 word preview shown to the recipient.")
@json_option
@click.pass_context
def send(ctx: click.Context, name: str, message: str, team: str, sender: str,
         summary: str | None, as_json: bool) -> None:
    """Send MESSAGE to member NAME of the team ('*' for everyone but the sender).

    MESSAGE '-' reads the message from stdin.
    """
    if message == "-":
        message = sys.stdin.read()
    home = home_of(ctx)
    team_file = TeamStore(home).get(team)
    member = team_file.member(sender)
    if member is None:
        names = ", ".join(m.name for m in team_file.members)
        raise NotFoundError(f"sender {sender!r} is not a member of team {team!r}; members: {names}")
    mailbox = Mailbox(home, team)
    recipients = mailbox.recipients(team_file, name, sender)
    entries = mailbox.send(name, message, sender=sender, author=command_author(os.environ), summary=summary,
                           color=member.color)  # a person's, unless an agent's Bash or a teammate runs this
    if as_json:
        emit_json([{"to": to, **e.wire()} for to, e in zip(recipients, entries)])
    elif not entries:
        echo("no recipients: the team has no other members")
    else:
        echo(f"sent to {', '.join(recipients)}")


@click.command()
@click.argument("name", callback=agent_name_callback)
@team_option
@click.option("--unread", is_flag=True, help="Only entries not yet delivered.")
@click.option("--take", is_flag=True,
              help="Print the undelivered entries in full (not as a table), then remove them from the inbox.")
@click.option("--follow", "-f", is_flag=True, help="Keep waiting and print entries as they arrive (Ctrl-C stops).")
@json_option
@click.pass_context
def inbox(ctx: click.Context, name: str, team: str, unread: bool, take: bool, follow: bool,
          as_json: bool) -> None:
    """Show the inbox of member NAME."""
    home = home_of(ctx)
    team_file = TeamStore(home).get(team)
    mailbox = Mailbox(home, team)
    mailbox.recipients(team_file, name, sender="")  # NotFoundError for a non-member

    def fetch() -> list[InboxEntry]:
        return mailbox.pending(name) if take else mailbox.read(name, unread_only=unread)

    if not follow:
        entries = fetch()
        _show(entries, as_json, empty_note=f"inbox of {name} is empty", whole=take)
        if take:
            _prune_shown(mailbox, name, entries)
        return
    _follow(mailbox, name, fetch, as_json, take=take)


def _prune_shown(mailbox: Mailbox, name: str, shown: list[InboxEntry]) -> None:
    """Remove ``shown`` from the inbox; called only after ``write_out`` wrote all of it.

    A reader that went away (``| head``) makes that write fail first, so
    nothing is pruned that did not reach the output.
    """
    if shown:
        mailbox.acknowledge(name, [delivery_key(e) for e in shown])


def _follow(mailbox: Mailbox, name: str, fetch: Callable[[], list[InboxEntry]], as_json: bool, *,
            take: bool) -> None:
    """Print entries as they arrive (each once) until Ctrl-C; with ``take``, prune each batch once printed."""
    seen: set[str] = set()
    watcher = mailbox.watcher(name)
    try:
        while True:
            fresh = [e for e in fetch() if delivery_key(e) not in seen]
            seen.update(delivery_key(e) for e in fresh)
            write_out("".join(_entry_line(entry, as_json) for entry in fresh))
            if take:
                _prune_shown(mailbox, name, fresh)
            watcher.wait(3600)
    except KeyboardInterrupt:
        return
    finally:
        watcher.close()


def _show(entries: list[InboxEntry], as_json: bool, *, empty_note: str, whole: bool) -> None:
    """JSON, or a table of one-line previews; ``whole`` (a take, which removes what it shows): every text in full."""
    if as_json:
        emit_json([e.wire() for e in entries])
    elif not entries:
        echo(empty_note)
    elif whole:
        write_out("".join(_entry_line(e, as_json=False) for e in entries))
    else:
        table(["time", "from", "summary / text", "read"],
              [[e.timestamp, e.sender, one_line(e.summary or e.text), "yes" if e.read else "no"] for e in entries])


def _entry_line(entry: InboxEntry, as_json: bool) -> str:
    """One entry in full: a JSON line, or its header and whole text (later lines indented, control characters
    escaped, so a text can neither pass for another entry nor rewrite the terminal)."""
    if as_json:
        return json_line(entry.wire())
    summary = f" ({visible(entry.summary)})" if entry.summary else ""
    text = "\n  ".join(visible(line) for line in entry.text.split("\n"))
    return f"[{visible(entry.timestamp)}] {visible(entry.sender)}{summary}: {text}\n"
