"""One team's gate on model requests: a budget, a cap on requests in flight, and a shared backoff.

Every request a team member sends to the Anthropic API passes here (the
provider's one place that sends, ``AnthropicProvider._call_with_retries``);
the members are separate processes, so the gate is files in the team's gate
directory (``Home.gate_dir``):

    limits.json           {"max_cost": 5.0, "max_concurrent_requests": 4}   (``write_limits``: run/up)
    slot-0 … slot-<N-1>   a request in flight holds an exclusive flock on one (``swarm.core.slots``);
                          the kernel drops it with its holder, so a killed member never keeps one
    not_before.json       {"until": <epoch seconds>}: nobody sends before then (a 429/529's retry-after
                          seen by any member)
    spend/<member>.json   that member's tokens and dollars so far (``Spend``), priced by the model table

The budget is checked before each request (not each retry): once the team's
spend reaches ``max_cost`` no member starts another call (``BudgetReached``);
calls already in flight finish, so a team may end a few calls over it.
A gate without a directory (``TeamGate(None, name)``: an agent outside any
team, or a lead before it has one) lets everything through and keeps what
its calls used; ``bind`` gives it its team later and charges that usage
there (a lead's calls before its TeamCreate count too).
"""

from __future__ import annotations

import contextlib
import os
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from swarm.core.document_codecs import ObjectCodec
from swarm.core.jsonfile import LockedJsonFile
from swarm.core.names import validate_name
from swarm.core.slots import Slots
from swarm.errors import ModelError, StorageError
from swarm.models.catalog import cost_usd
from swarm.models.messages import Usage

log = logging.getLogger(__name__)

DEFAULT_CONCURRENCY = 6
"""Requests a team has in flight at most when nothing says otherwise: below one API key's usual limits."""
LIMITS_FILE = "limits.json"
NOT_BEFORE_FILE = "not_before.json"
SPEND_DIR = "spend"


class GateLimits(BaseModel):
    """What a team may spend and how many requests it may have in flight (``limits.json``)."""

    model_config = ConfigDict(extra="forbid")

    max_cost: float | None = Field(default=None, gt=0)
    """US dollars; None: no budget."""
    max_concurrent_requests: int = Field(default=DEFAULT_CONCURRENCY, ge=1)


class Spend(BaseModel):
    """One member's model calls so far: tokens by kind and what they cost."""

    usd: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    unpriced_tokens: int = 0
    """Tokens of models the table has no price for (counted, not charged)."""
    calls: int = 0

    def plus(self, usage: Usage, usd: float | None) -> Spend:
        return Spend(usd=self.usd + (usd or 0.0), input_tokens=self.input_tokens + usage.input_tokens,
                     output_tokens=self.output_tokens + usage.output_tokens,
                     cache_read_input_tokens=self.cache_read_input_tokens + usage.cache_read_input_tokens,
                     cache_creation_input_tokens=self.cache_creation_input_tokens + usage.cache_creation_input_tokens,
                     unpriced_tokens=self.unpriced_tokens + (usage.total if usd is None else 0), calls=self.calls + 1)


class BudgetReached(ModelError):
    """The team's budget is spent: no new model call starts."""


def write_limits(directory: Path, limits: GateLimits) -> None:
    """Set the team's limits (atomic; what run/up were given)."""
    LockedJsonFile(directory / LIMITS_FILE, ObjectCodec(), indent=2).update(
        lambda doc: (doc.clear(), doc.update(limits.model_dump(mode="json"))))


def _read(path: Path) -> dict[str, Any]:
    """A gate file's object; empty when there is none or it is unusable (logged): the gate never stops a call
    for a file it cannot read."""
    try:
        return LockedJsonFile(path, ObjectCodec()).read(quiet=True)
    except StorageError as exc:
        log.warning("ignored an unreadable gate file", extra={"path": str(path), "error": str(exc)})
        return {}


def read_limits(directory: Path) -> GateLimits:
    """The team's limits; the defaults when none were set (or the file is unusable: logged)."""
    raw = _read(directory / LIMITS_FILE)
    try:
        return GateLimits.model_validate(raw)
    except ValidationError as exc:
        log.warning("ignored unusable gate limits", extra={"path": str(directory / LIMITS_FILE), "error": str(exc)})
        return GateLimits()


def read_spends(directory: Path) -> dict[str, Spend]:
    """Every member's spend recorded in the gate ``directory``, by member name."""
    spends: dict[str, Spend] = {}
    folder = directory / SPEND_DIR
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            spends[path.stem] = Spend.model_validate(_read(path))
        except ValidationError:
            log.warning("ignored an unusable spend file", extra={"path": str(path)})
    return spends


def spend_path(directory: Path, member: str) -> Path:
    """Where ``member``'s spend is recorded in the gate ``directory``."""
    return directory / SPEND_DIR / f"{validate_name(member, 'agent name')}.json"


def read_spend(path: Path) -> Spend:
    """The spend recorded at ``path`` (``spend_path``); nothing spent when there is no usable record."""
    if not os.path.isfile(path):  # no call charged yet (an offline model's never are): one stat
        return Spend()
    try:
        return Spend.model_validate(_read(path))
    except ValidationError:
        log.warning("ignored an unusable spend file", extra={"path": str(path)})
        return Spend()


def total_usd(spends: dict[str, Spend]) -> float:
    return sum(s.usd for s in spends.values())


class TeamGate:
    """The gate as one member (``member``) of the team whose gate directory is ``directory`` sees it."""

    def __init__(self, directory: Path | None, member: str, *, clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.directory = directory
        self.member = validate_name(member, "agent name")
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._unbound: list[tuple[str, Usage]] = []
        """Calls made while no team was bound, charged at the next ``bind``."""

    def bind(self, directory: Path | None) -> None:
        """Gate this member's requests by the team at ``directory`` from now on (None: no team any more)."""
        self.directory = directory
        with self._lock:
            owed, self._unbound = self._unbound, []
        for model, usage in owed:
            self.charge(model, usage)

    # -- budget --------------------------------------------------------------------------

    def check_budget(self) -> None:
        """BudgetReached (one line, what to do) when the team has spent its budget."""
        if self.directory is None:
            return
        limit = read_limits(self.directory).max_cost
        if limit is None:
            return
        spent = total_usd(read_spends(self.directory))
        if spent >= limit:
            raise BudgetReached(f"the team's budget of ${limit:.2f} is spent (${spent:.4f} used): no more model "
                                "calls; raise it with --max-cost or [team] max_cost to go on")

    def charge(self, model: str, usage: Usage) -> None:
        """Record one call's tokens and price against this member."""
        if self.directory is None:
            with self._lock:
                self._unbound.append((model, usage))
            return
        usd = cost_usd(model, usage)
        path = spend_path(self.directory, self.member)

        def add(doc: dict[str, Any]) -> None:
            try:
                before = Spend.model_validate(doc)
            except ValidationError:
                before = Spend()
            doc.clear()
            doc.update(before.plus(usage, usd).model_dump(mode="json"))

        try:
            with self._lock:  # the subagents of one member share its file
                LockedJsonFile(path, ObjectCodec(), fsync=False).update(add)
        except StorageError as exc:  # the answer is in: a spend that cannot be written is logged, not raised
            log.error("model call not charged", extra={"agent": self.member, "path": str(path), "error": str(exc)})

    # -- rate ----------------------------------------------------------------------------

    @contextmanager
    def in_flight(self, cancel: threading.Event | None = None) -> Iterator[None]:
        """Hold one of the team's request slots for the ``with`` body, once no backoff is in force; ``cancel`` set
        while either is waited for ends the wait with ``InterruptedError``."""
        if self.directory is None:
            yield
            return
        slots = Slots(self.directory, read_limits(self.directory).max_concurrent_requests)
        while True:
            self._wait_out_backoff(cancel)
            with contextlib.ExitStack() as held:
                try:
                    held.enter_context(slots.hold(cancel))
                except StorageError as exc:  # a slot file swarm cannot open: the call goes on without one
                    log.warning("request sent without a team slot", extra={"agent": self.member, "error": str(exc)})
                if self._not_before() <= self._clock():  # nobody set a backoff while this waited for a slot
                    yield
                    return

    def back_off(self, seconds: float) -> None:
        """Nobody in the team sends for ``seconds`` from now (the API said so with retry-after)."""
        if self.directory is None or seconds <= 0:
            return
        until = self._clock() + seconds

        def later(doc: dict[str, Any]) -> None:
            current = doc.get("until")
            if not isinstance(current, (int, float)) or current < until:
                doc["until"] = until

        try:
            LockedJsonFile(self.directory / NOT_BEFORE_FILE, ObjectCodec(), fsync=False).update(later)
        except StorageError as exc:
            log.warning("team backoff not shared", extra={"agent": self.member, "error": str(exc)})

    def _not_before(self) -> float:
        assert self.directory is not None
        until = _read(self.directory / NOT_BEFORE_FILE).get("until")
        return float(until) if isinstance(until, (int, float)) else 0.0

    def _wait_out_backoff(self, cancel: threading.Event | None) -> None:
        """Until the team's backoff is over; ``cancel`` set meanwhile ends the wait with ``InterruptedError`` (as a
        slot's wait does)."""
        while (left := self._not_before() - self._clock()) > 0:
            log.info("waiting out the team's backoff", extra={"agent": self.member, "delay_s": round(left, 3)})
            if cancel is None:
                self._sleep(left)
            elif cancel.wait(left):
                raise InterruptedError("cancelled while waiting out the team's backoff")
