"""Group commit: many processes append to one JSON array file, one locked rewrite and fsync per batch.

A rewrite of the whole file (fsynced, under its lock) per appended item caps
a busy inbox at a few hundred items a second, most of it spent queueing for
the lock. Here an appender first drops its item into the file's spool, a
directory beside it (``.<file name>.spool/``, hidden, so nothing that looks
for ``*.json`` sees it), then:

- if it gets the lock (one try), it *claims* every item in the spool
  (renames ``<x>.json`` to ``<x>.taken``), appends them all to the file in
  one rewrite, and deletes the claimed files — still under the lock, after
  the rewrite is durable;
- if someone else holds the lock, it waits (short sleeps, backing off) until
  its own item is gone from the spool — committed by that holder — or the
  lock is free to take.

So the appender returns only once its item is durably in the file, exactly
as with a plain locked append, but a holder commits everything spooled while
it waited, and the others never take the lock at all.

Crashes: a spool file is written to a dot-temp name and renamed, so a claimed
item is always whole. A holder killed after claiming leaves ``.taken`` files;
the next holder (the lock proves the previous one is gone) commits them,
skipping any whose key (``msg_id``) is already in the file. If the killed
holder's rewrite had landed and a reader had already pruned those items,
they are appended a second time: the one duplicate a ``kill -9`` can cause,
which the teammate's delivery record absorbs (``swarm.teammate.delivery``).
An appender killed after spooling never heard "done"; its item is committed
by the next appender.

A wait that runs out withdraws the item (unlinks its spool file) and raises
``LockTimeoutError``; if a holder had claimed it already, the appender waits
for that holder instead, since the item is then on its way into the file.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swarm.core.fileio import storage_error
from swarm.core.flock import who_holds
from swarm.core.home import ensure_dir
from swarm.core.jsonfile import LockedJsonFile, decode_json, encode_json
from swarm.errors import LockBusyError, LockTimeoutError

log = logging.getLogger(__name__)

FIRST_POLL = 0.0001
"""Seconds before an appender first looks again at its spooled item; doubled up to ``MAX_POLL``."""
MAX_POLL = 0.001
BLIND_TRY = 0.01
"""While the lock directory is there (held), a waiter tries the lock only this often (seconds): the one
``lstat`` tells what a failed try (open, flock, close, an exception) would; a holder killed with the lock
leaves its directory, and the try that clears it still comes."""
CLAIMED_GRACE = 10.0
"""Seconds an appender whose wait ran out waits for a holder that claimed its item."""
STALE_TEMP = 60.0
"""A spool temp file older than this many seconds was left by an appender killed mid-write."""

SPOOLED = ".json"
CLAIMED = ".taken"
TEMP_PREFIX = ".tmp-"


def spool_dir(path: Path) -> Path:
    """Where appends to ``path`` wait to be committed."""
    return path.with_name(f".{path.name}.spool")


@dataclass
class SpooledAppend:
    """Appends items to the JSON array in ``file`` by group commit (see the module docstring)."""

    file: LockedJsonFile[list[Any]]
    key: Callable[[Any], str | None]
    """An item's identity (None: none), so an item already in the file is never appended twice."""
    _spool: Path = field(init=False)
    _spool_ready: bool = field(init=False, default=False)
    _prefix: str = field(init=False)
    """``<spool>/``: the spool's files are named by strings, as a ``Path`` is built by parsing (several per item)."""
    _lock_dir: str = field(init=False)

    def __post_init__(self) -> None:
        self._spool = spool_dir(self.file.path)
        self._prefix = os.fspath(self._spool) + os.sep
        self._lock_dir = os.fspath(self.file.path) + ".lock"

    def append(self, item: Any) -> None:
        """Append ``item``; return once it is durably in the file."""
        if self._try_commit(item=item):
            return  # the lock was free: no spool needed
        own = self._drop(item)
        claimed = _claimed(own)
        deadline = time.monotonic() + self.file.lock_timeout
        lock_dir = self._lock_dir
        delay = FIRST_POLL
        tried = 0.0
        while True:
            if self._gone(own, claimed):
                return
            now = time.monotonic()
            if now - tried >= BLIND_TRY or not os.path.lexists(lock_dir):  # a held lock shows its directory
                tried = now
                if self._try_commit(own=own):
                    return  # our item was spooled before we claimed, so it is in this commit (or an earlier one)
            if time.monotonic() >= deadline:
                self._withdraw(own, claimed)
                return
            time.sleep(delay)
            delay = min(delay * 2, MAX_POLL)

    def _try_commit(self, *, item: Any = None, own: str | None = None) -> bool:
        """One try at the lock: commit the whole spool (and ``item``, if given) if we get it; False if it is held.

        If the rewrite fails (a full disk), the claims go back to the spool for
        the next holder, except our own item (``own``, or ``item``), which is
        withdrawn: the caller hears the error and nothing of it is sent.
        """
        claims: list[str] = []
        mine = _claimed(own) if own is not None else None

        def commit(entries: list[Any]) -> tuple[list[Any], list[str]]:
            claims.extend(self._claim())
            return self._merge(entries, claims, [] if own is not None else [item]), claims

        def give_back() -> None:
            for path in claims:
                if path == mine:
                    _unlink_quietly(path)
                else:
                    _rename_quietly(path, path.removesuffix(CLAIMED) + SPOOLED)
            if own is not None:
                _unlink_quietly(own)

        try:
            self.file.transform(commit, wait=0, then=_unlink_all, undo=give_back)
        except LockBusyError:
            return False
        return True

    def _drop(self, item: Any) -> str:
        """Write ``item`` into the spool (whole, by temp + rename; no fsync: nothing is promised yet)."""
        if not self._spool_ready:
            try:
                ensure_dir(self._spool)
            except OSError as exc:
                raise storage_error(exc, self._spool, "create the spool directory") from exc
            self._spool_ready = True
        name = uuid.uuid4().hex
        temp = f"{self._prefix}{TEMP_PREFIX}{name}"
        own = f"{self._prefix}{name}{SPOOLED}"
        try:
            with open(temp, "xb") as out:
                out.write(encode_json(item))
            os.rename(temp, own)
        except OSError as exc:
            _unlink_quietly(temp)
            raise storage_error(exc, Path(own), "write") from exc
        return own

    @staticmethod
    def _gone(own: str, claimed: str) -> bool:
        """True once the item is committed: neither spooled nor claimed (a claim is deleted only after the rewrite)."""
        return not os.path.lexists(own) and not os.path.lexists(claimed)

    def _merge(self, entries: list[Any], claims: list[str], direct: list[Any]) -> list[Any]:
        """``entries`` plus each claimed item (in spool order), then ``direct``, skipping what the file holds."""
        have = {self.key(e) for e in entries}
        have.discard(None)
        read = [(path, _read_item(path)) for path in claims]
        spooled = [item for _, item in sorted(read, key=lambda pair: (_timestamp(pair[1]), os.path.basename(pair[0])))]
        for item in spooled + direct:
            ident = self.key(item) if item is not _UNREADABLE else None
            if item is _UNREADABLE or (ident is not None and ident in have):
                continue  # unreadable (logged), or committed by a holder that died before deleting its claim
            entries.append(item)
            if ident is not None:
                have.add(ident)
        return entries

    def _claim(self) -> list[str]:
        """Rename each spooled item to a claim and take over the claims a dead holder left (the lock is held)."""
        try:
            names = os.listdir(self._spool)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise storage_error(exc, self._spool, "list") from exc
        claims: list[str] = []
        for name in names:
            path = self._prefix + name
            if name.endswith(SPOOLED):
                target = _claimed(path)
                if _rename_quietly(path, target):
                    claims.append(target)
            elif name.endswith(CLAIMED):
                claims.append(path)
            elif name.startswith(TEMP_PREFIX):
                _remove_if_stale(path)
        return claims

    def _withdraw(self, own: str, claimed: str) -> None:
        """The wait ran out: take the item back, or wait for the holder that claimed it."""
        try:
            os.unlink(own)
        except FileNotFoundError:
            pass
        else:
            lock = self.file.path.with_name(f"{self.file.path.name}.lock")
            raise LockTimeoutError(f"could not lock {self.file.path} within {self.file.lock_timeout:g}s, so the "
                                   f"message was not sent; {who_holds(lock)}")
        end = time.monotonic() + CLAIMED_GRACE
        while os.path.lexists(claimed):
            if time.monotonic() >= end:
                raise LockTimeoutError(
                    f"a writer claimed the message for {self.file.path} but has not finished; "
                    f"it will be delivered when that writer (or the next) completes — do not resend"
                )
            time.sleep(MAX_POLL)


class _Unreadable:
    pass


_UNREADABLE: Any = _Unreadable()


def _claimed(path: str) -> str:
    """The name a spooled item (``<x>.json``) takes once a holder claims it (``<x>.taken``)."""
    return path.removesuffix(SPOOLED) + CLAIMED


def _read_item(path: str) -> Any:
    """A claimed item, or ``_UNREADABLE`` for a file that is not JSON (never written by swarm; logged, dropped)."""
    try:
        with open(path, "rb") as claimed:
            return decode_json(claimed.read())
    except FileNotFoundError:
        return _UNREADABLE
    except (OSError, ValueError) as exc:
        log.warning("dropped an unreadable spooled item", extra={"path": path, "error": str(exc)[:200]})
        return _UNREADABLE


def _timestamp(item: Any) -> str:
    value = item.get("timestamp") if isinstance(item, dict) else None
    return value if isinstance(value, str) else ""


def _remove_if_stale(path: str) -> None:
    try:
        if time.time() - os.lstat(path).st_mtime > STALE_TEMP:
            os.unlink(path)
    except FileNotFoundError:
        pass


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _unlink_all(paths: list[str]) -> None:
    """After the rewrite: delete the claims it committed (the lock is still held)."""
    for path in paths:
        _unlink_quietly(path)


def _rename_quietly(source: str, target: str) -> bool:
    """Rename ``source`` to ``target``; False if ``source`` is gone (withdrawn, or claimed by someone else)."""
    try:
        os.rename(source, target)
    except FileNotFoundError:
        return False
    return True
