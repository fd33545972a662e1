"""Which lead keys a host trusts: ``--trust-key`` files, and keys its person trusted on first use.

    <home>/hosts/trusted.keys   lead keys (one ``swarm host key`` line each), 0600, written only here
                                (``trust_key`` / ``revoke``: atomic, under the file's lock); read by
                                ``host serve`` again whenever it changes (``HostTrust.current``)
    <home>/hosts/asked.json     keys whose requests reached this host untrusted: fingerprint, team, the
                                lead's machine as the request claims, first and last seen (``record_ask``)

A key is named by its fingerprint, ``sha256:<hex of SHA-256 of the key's DER SubjectPublicKeyInfo>``
(``swarm host key --fingerprint`` prints it on the lead's machine). The person on the host trusts one
that asked by its fingerprint or a prefix of at least ``MIN_PREFIX`` hex digits that matches exactly
one key that asked (64 bits: a key ground to look like another's short prefix is not enough), or by
the whole line (``--key``). Trust is by key, not by line: the creation time in a line does not matter.

A trust file that is not this user's, or that others may write (group/world write bits), is refused
with an error: whoever can write it could run code here.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from swarm.core.clock import now_ms
from swarm.core.document_codecs import ObjectCodec
from swarm.core.fileio import read_regular, replace_file
from swarm.core.home import FILE_MODE, Home, ensure_dir
from swarm.core.jsonfile import LockedJsonFile, lock_of
from swarm.core.signing import VerifyKey, unb64url
from swarm.errors import UsageError

TRUST_FILE = "trusted.keys"
ASKED_FILE = "asked.json"
MIN_PREFIX = 16
"""Hex digits a fingerprint prefix must have: 64 bits, not ground cheaply."""
PREFIX = "sha256:"
MAX_ASKED = 64
"""Keys that asked kept at most (the most recently seen): a flood of strangers' keys does not grow the file."""
CLAIM_CHARS = 100
"""A requester's claims (team, lead machine) are cut to this length when noted."""


class AskedKey(BaseModel):
    fingerprint: str
    key: str
    team: str
    lead: str
    """The lead's machine as the (self-signed) request claims it: a hint, not proof."""
    first_seen_ms: int
    last_seen_ms: int


def parse_key(line: str, source: str) -> str:
    """``line`` stripped, if it is a lead key (``<ms>.<base64url SPKI>``); UsageError naming ``source`` if not."""
    text = line.strip()
    try:
        VerifyKey.parse(text)
    except (UsageError, ValueError):
        raise UsageError(f"{source}: {text[:40]!r} is not a lead key (`swarm host key --team T` prints one)") from None
    return text


def fingerprint(key: str) -> str:
    """``sha256:<hex>`` of the key's public bytes (the creation time in the line is not part of it)."""
    return PREFIX + hashlib.sha256(unb64url(key.strip().partition(".")[2])).hexdigest()


def keys_in(text: str, source: str) -> dict[str, str]:
    """``{fingerprint: line}`` of the key lines in ``text`` (blank lines and ``#`` comments skipped)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key = parse_key(line, source)
            found[fingerprint(key)] = key
    return found


def read_key_file(path: Path, *, private: bool) -> dict[str, str]:
    """The keys of ``path`` (none if missing and ``private``); ``private`` files must be this user's, not writable
    by others."""
    try:
        found = read_regular(path)
    except OSError as exc:
        raise UsageError(f"trusted keys {path}: cannot read it ({exc.strerror or exc})") from None
    if found is None:
        if private:
            return {}
        raise UsageError(f"--trust-key {path}: no such file")
    data, mode = found
    if private:
        problems = []
        if path.stat().st_uid != os.getuid():
            problems.append("owned by another user")
        if mode & (stat.S_IWGRP | stat.S_IWOTH):
            problems.append(f"writable by others (mode {mode:o})")
        if problems:
            raise UsageError(f"trusted keys {path}: refused, it is {' and '.join(problems)}; whoever can write it "
                             f"could run code here (check what it holds, then `chmod 600` it as its owner)")
    return keys_in(data.decode("utf-8", "replace"), str(path))


@dataclass
class HostTrust:
    """The keys a host trusts now: its ``--trust-key`` files and its home's trust file."""

    home: Home
    files: list[Path] = field(default_factory=list)
    error: str | None = field(default=None, init=False)
    """Why the last read trusted no key (a bad or unsafe file); None when it went well."""
    _stamp: tuple[Any, ...] | None = field(default=None, init=False)
    _keys: dict[str, str] = field(default_factory=dict, init=False)

    @property
    def path(self) -> Path:
        return trust_path(self.home)

    def read(self) -> dict[str, str]:
        """``{fingerprint: line}`` of every trusted key; UsageError for a bad or unsafe file."""
        keys: dict[str, str] = {}
        for path in self.files:
            keys.update(read_key_file(path, private=False))
        keys.update(read_key_file(self.path, private=True))
        return keys

    def stamp(self) -> tuple[Any, ...]:
        """Changes when any trust file changes (identity, size, time, mode, owner)."""
        marks: list[Any] = []
        for path in [*self.files, self.path]:
            try:
                st = path.stat()
                marks.append((st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode, st.st_uid))
            except OSError:
                marks.append(None)
        return tuple(marks)

    def current(self) -> tuple[dict[str, str], bool]:
        """The trusted keys, re-read if a file changed since the last call, and whether they were re-read.

        A file that cannot be used (unsafe, not a key) makes the host trust no key until it changes again;
        ``error`` then says why."""
        stamp = self.stamp()
        if stamp == self._stamp:
            return self._keys, False
        self._stamp = stamp
        try:
            self._keys, self.error = self.read(), None
        except UsageError as exc:
            self._keys, self.error = {}, str(exc)
        return self._keys, True


def trust_path(home: Home) -> Path:
    return home.root / "hosts" / TRUST_FILE


def _asked_file(home: Home) -> LockedJsonFile[dict[str, Any]]:
    return LockedJsonFile(home.root / "hosts" / ASKED_FILE, ObjectCodec(), indent=2)


def record_ask(home: Home, key: str, team: str, lead: str) -> str:
    """Note that ``key`` asked this host to run a teammate of ``team``; its fingerprint."""
    found = fingerprint(key)
    now = now_ms()

    def note(asked: dict[str, Any]) -> None:
        before = asked.get(found)
        first = before.get("first_seen_ms", now) if isinstance(before, dict) else now
        asked[found] = AskedKey(fingerprint=found, key=key, team=team[:CLAIM_CHARS], lead=lead[:CLAIM_CHARS],
                                first_seen_ms=first, last_seen_ms=now).model_dump()
        for stale in sorted(asked, key=lambda k: _seen(asked[k]))[: max(0, len(asked) - MAX_ASKED)]:
            del asked[stale]

    _asked_file(home).update(note)
    return found


def _seen(value: Any) -> int:
    seen = value.get("last_seen_ms") if isinstance(value, dict) else None
    return seen if isinstance(seen, int) else 0


def asked_keys(home: Home) -> list[AskedKey]:
    """The keys that asked, oldest first (entries that do not parse are skipped)."""
    found = []
    for value in _asked_file(home).read(quiet=True).values():
        try:
            found.append(AskedKey.model_validate(value))
        except ValueError:
            continue
    return sorted(found, key=lambda a: a.first_seen_ms)


def resolve(prefix: str, candidates: dict[str, str]) -> tuple[str, str]:
    """The one ``(fingerprint, line)`` of ``candidates`` that ``prefix`` names; UsageError if none or several."""
    wanted = prefix.strip().lower().removeprefix(PREFIX)
    if len(wanted) < MIN_PREFIX or any(c not in "0123456789abcdef" for c in wanted):
        raise UsageError(f"{prefix!r} is not a fingerprint: give `sha256:` and at least {MIN_PREFIX} hex digits "
                         f"(`swarm host trust` lists the keys that asked)")
    matches = [(fp, line) for fp, line in candidates.items() if fp.removeprefix(PREFIX).startswith(wanted)]
    if not matches:
        raise UsageError(f"no key with fingerprint {prefix} is known here; `swarm host trust` lists the keys that "
                         f"asked, or trust the whole line with `--key`")
    if len(matches) > 1:
        raise UsageError(f"{prefix} matches {len(matches)} keys; give more of the fingerprint")
    return matches[0]


def trust_key(home: Home, key: str) -> str:
    """Add lead key line ``key`` to this home's trust file (nothing changes if it is there); its fingerprint."""
    line = parse_key(key, "--key")
    return _change(home, lambda keys: {**keys, fingerprint(line): line}, fingerprint(line))


def trust_fingerprint(home: Home, prefix: str) -> tuple[str, str]:
    """Trust the key that asked with fingerprint (prefix) ``prefix``; ``(fingerprint, line)``."""
    fp, line = resolve(prefix, {a.fingerprint: a.key for a in asked_keys(home)})
    trust_key(home, line)
    return fp, line


def revoke(home: Home, prefix: str) -> str:
    """Remove the trusted key ``prefix`` names from this home's trust file; its fingerprint."""
    fp, _ = resolve(prefix, read_key_file(trust_path(home), private=True))
    return _change(home, lambda keys: {k: v for k, v in keys.items() if k != fp}, fp)


def _change(home: Home, step: Callable[[dict[str, str]], dict[str, str]], result: str) -> str:
    path = trust_path(home)
    ensure_dir(path.parent)
    with lock_of(path):
        keys = step(read_key_file(path, private=True))
        body = "# lead keys this host runs spawn requests of (`swarm host trust`)\n" + "".join(
            f"{line}\n" for line in keys.values())
        replace_file(path, body.encode(), mode=FILE_MODE)
    return result
