"""Lead signatures on inbox entries: Claude Code's scheme (docs/protocol.md, "Lead signatures").

    lead side                                   teammate side
    ---------                                   -------------
    <home>/teams/<team>/lead.key (0600)
    lead_key / rotate_lead_key ── LeadKey ──verify_arg──> --lead-verify-key <ms>.<b64url SPKI>
    sign_entry(entry, key) -> entry.lead_sig             VerifyKey.parse(arg).admits(entry)
                                                         LeadVerifier: + each msg_id once

The signature is Ed25519 over the UTF-8 bytes of ``JSON.stringify(["claude-team-lead-entry-v1",
msg_id, from, timestamp, text, summary ?? null, color ?? null, from_plugin ?? null])``, written
base64url without padding (Node's ``Buffer.toString("base64url")``). A teammate accepts a lead
entry only if the signature verifies, its ``msg_id`` was not taken in before, and its timestamp
is not older than the key's creation time minus ``STALE_GRACE_MS``.

A second signature (swarm's; Claude Code ignores the fields) says a **person** chose an entry's
words: ``author_sig``, Ed25519 with the same key over ``JSON.stringify(["swarm-entry-author-v1",
author, recipient, msg_id, from, timestamp, text, summary ?? null, color ?? null, from_plugin ??
null])``. ``Mailbox.send(author="person")`` writes it for a person's own prompt or ``swarm send``;
what a model chose (the lead model's spawn prompt and SendMessage, whatever it runs through its
Bash) gets ``author: "model"`` and no such signature, though the lead process signs it as the
lead's. The lead signature proves which process wrote an entry, not who chose its words; the
author signature does, and it names the recipient, so an entry copied into another inbox is not
the person's there. A teammate takes an entry as a person's only through ``LeadVerifier.by_person``.

The key file holds the private key and its creation time; it is created by the
first lead-side use (``lead_key``) and replaced when a team of that name is
created again (``rotate_lead_key``). ``Mailbox`` signs every entry sent as the
lead with it (``signing_key``); a home where the key cannot be read or made
(read-only) sends lead entries unsigned, which swarm's teammates take as
unverified text.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import os
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from swarm.core.clock import now_ms
from swarm.core.home import FILE_MODE, Home, ensure_dir
from swarm.core.protocol import InboxEntry
from swarm.errors import UsageError

if TYPE_CHECKING:
    import nacl.signing

log = logging.getLogger(__name__)

SCHEME = "claude-team-lead-entry-v1"
"""First element of the signed array."""
AUTHOR_SCHEME = "swarm-entry-author-v1"
"""First element of the array ``author_sig`` signs."""
KEY_FILE = "lead.key"
"""Name of the lead's key file in the team directory."""
STALE_GRACE_MS = 120_000
"""A lead entry may be this much older than the key it is signed with (clock skew), no more."""

_SURROGATE = re.compile("[\ud800-\udfff]")


# -- the signed bytes ----------------------------------------------------------------


def signed_bytes(entry: InboxEntry) -> bytes:
    """The exact bytes the lead signs for ``entry``: Node's ``JSON.stringify`` of the scheme's array."""
    fields = [SCHEME, entry.msg_id, entry.sender, entry.timestamp, entry.text,
              entry.summary, entry.color, entry.from_plugin]
    return js_stringify(fields).encode("utf-8")


def author_bytes(entry: InboxEntry, recipient: str) -> bytes:
    """The bytes ``author_sig`` signs: who chose the words, for whom, and the entry itself."""
    fields = [AUTHOR_SCHEME, entry.author, recipient, entry.msg_id, entry.sender, entry.timestamp, entry.text,
              entry.summary, entry.color, entry.from_plugin]
    return js_stringify(fields).encode("utf-8")


def js_stringify(values: list[str | None]) -> str:
    """``JSON.stringify`` of an array of strings and nulls, character for character.

    Compact separators; non-ASCII, ``\\u2028`` and ``/`` written as they are; control
    characters escaped as JavaScript does (``\\n``, ``\\u001f``); a lone surrogate
    escaped as its code in lowercase hex, e.g. ``\\udc80`` (ES2019 well-formed stringify). Strings are taken
    as JavaScript sees them (UTF-16), so two code points forming a surrogate pair are one
    character.
    """
    as_js = [_utf16(v) if isinstance(v, str) else v for v in values]
    text = json.dumps(as_js, ensure_ascii=False, separators=(",", ":"))
    return _SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def _utf16(value: str) -> str:
    return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def b64url(data: bytes) -> str:
    """base64url without padding (Node's ``toString("base64url")``)."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unb64url(text: str) -> bytes:
    """Decode base64url with or without padding; ``ValueError`` if it is not base64url."""
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    except binascii.Error as exc:
        raise ValueError(str(exc)) from exc


# -- keys ----------------------------------------------------------------------------


@dataclass(frozen=True)
class LeadKey:
    """The lead's private key and when it was made (epoch ms)."""

    private: Ed25519PrivateKey
    created_ms: int

    @classmethod
    def generate(cls) -> LeadKey:
        return cls(Ed25519PrivateKey.generate(), now_ms())

    @property
    def verify_arg(self) -> str:
        """``<ms>.<base64url(DER SubjectPublicKeyInfo)>``: what ``--lead-verify-key`` carries."""
        der = self.private.public_key().public_bytes(serialization.Encoding.DER,
                                                      serialization.PublicFormat.SubjectPublicKeyInfo)
        return f"{self.created_ms}.{b64url(der)}"

    def dumps(self) -> str:
        raw = self.private.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                                         serialization.NoEncryption())
        return json.dumps({"scheme": "ed25519", "createdMs": self.created_ms, "privateKey": b64url(raw)}) + "\n"

    @classmethod
    def loads(cls, text: str) -> LeadKey:
        """The key in a key file's text; ``ValueError`` if it is not one."""
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("scheme") != "ed25519" or not isinstance(data.get("createdMs"), int):
            raise ValueError("not a swarm lead key file")
        return cls(Ed25519PrivateKey.from_private_bytes(unb64url(str(data.get("privateKey", "")))),
                   data["createdMs"])


def key_path(home: Home, team: str) -> Path:
    """Where team ``team``'s lead key lives."""
    return home.team_dir(team) / KEY_FILE


def lead_key(home: Home, team: str) -> LeadKey:
    """Team ``team``'s lead key, made now if there is none (concurrent callers end up with the same key)."""
    path = key_path(home, team)
    try:
        return LeadKey.loads(path.read_text())
    except FileNotFoundError:
        pass
    key = LeadKey.generate()
    staged = _stage(path, key)
    try:
        os.link(staged, path)  # fails if another process made the key first: use theirs
    except FileExistsError:
        return LeadKey.loads(path.read_text())
    finally:
        staged.unlink()
    log.info("made lead key", extra={"team": team})
    return key


def rotate_lead_key(home: Home, team: str) -> LeadKey:
    """Replace team ``team``'s lead key by a new one (a team of that name was just created)."""
    key = install_lead_key(home, team, LeadKey.generate())
    log.info("rotated lead key", extra={"team": team})
    return key


def install_lead_key(home: Home, team: str, key: LeadKey) -> LeadKey:
    """Make ``key`` team ``team``'s lead key in this home (a lead taking a team over with the old lead's key)."""
    path = key_path(home, team)
    os.replace(_stage(path, key), path)
    return key


def verify_key_arg(home: Home, team: str) -> str:
    """The ``--lead-verify-key`` value for a teammate of team ``team`` (the key is made if missing)."""
    return lead_key(home, team).verify_arg


def signing_key(home: Home, team: str) -> LeadKey | None:
    """The lead key to sign with, or None when it cannot be read or made here (the entry goes unsigned)."""
    try:
        return lead_key(home, team)
    except (OSError, ValueError) as exc:
        log.warning("lead entries go unsigned: no usable lead key",
                    extra={"team": team, "path": str(key_path(home, team)), "reason": str(exc)})
        return None


def _stage(path: Path, key: LeadKey) -> Path:
    """Write ``key`` to a new 0600 file beside ``path`` (flushed to disk); return its path."""
    ensure_dir(path.parent)
    staged = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    try:
        os.write(fd, key.dumps().encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    return staged


# -- signing and verifying -------------------------------------------------------------


def sign_entry(entry: InboxEntry, key: LeadKey) -> str:
    """``lead_sig`` for ``entry`` (set its ``msg_id``, timestamp and other fields first)."""
    return b64url(key.private.sign(signed_bytes(entry)))


def sign_author(entry: InboxEntry, recipient: str, key: LeadKey) -> str:
    """``author_sig`` for ``entry`` sent to ``recipient`` (set ``author`` and every other field first)."""
    return b64url(key.private.sign(author_bytes(entry, recipient)))


@dataclass(frozen=True)
class VerifyKey:
    """The lead's public key as a teammate receives it, and the key's creation time (epoch ms).

    Signatures are checked by libsodium (PyNaCl), the same Ed25519: a check
    there takes half the time OpenSSL's does (45 against 94 µs here), and a
    teammate checks one for every entry the lead sends it, on the path from
    the message to its turn. libsodium is also the stricter of the two (it
    refuses non-canonical signatures and small-order keys), so nothing OpenSSL
    would refuse gets through. PyNaCl is imported here, where a key to check
    with is made (~5 ms): a lead's commands only sign, and never pay for it
    (the CLI server imports it for the teammates it forks).
    """

    public: Ed25519PublicKey
    created_ms: int
    _checker: nacl.signing.VerifyKey = field(init=False, repr=False, compare=False)
    _refused: type[Exception] = field(init=False, repr=False, compare=False)
    """What the checker raises for a signature that does not verify (kept here: no import per check)."""

    def __post_init__(self) -> None:
        import nacl.exceptions
        import nacl.signing

        raw = self.public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        object.__setattr__(self, "_checker", nacl.signing.VerifyKey(raw))
        object.__setattr__(self, "_refused", nacl.exceptions.BadSignatureError)

    @classmethod
    def parse(cls, arg: str) -> VerifyKey:
        """Read ``<ms>.<base64url SPKI>``; ``UsageError`` if it is not one."""
        ms, _, spki = arg.partition(".")
        try:
            public = serialization.load_der_public_key(unb64url(spki))
        except (ValueError, UnsupportedAlgorithm) as exc:
            raise UsageError(f"--lead-verify-key: not a base64url DER public key ({exc})") from exc
        if not ms.isdigit() or not isinstance(public, Ed25519PublicKey):
            raise UsageError("--lead-verify-key must be <ms>.<base64url SPKI of an Ed25519 key>")
        return cls(public, int(ms))

    def verifies(self, signature: str, data: bytes) -> bool:
        """Is ``signature`` (base64url) this key's Ed25519 signature of ``data``?"""
        try:
            self._checker.verify(data, unb64url(signature))
        except (self._refused, ValueError):  # a wrong signature; not base64url, or not 64 bytes
            return False
        return True

    def signed(self, entry: InboxEntry) -> bool:
        """Does ``entry.lead_sig`` verify with this key?"""
        return bool(entry.lead_sig) and self.verifies(entry.lead_sig, signed_bytes(entry))

    def fresh(self, entry: InboxEntry) -> bool:
        """Is ``entry`` no older than this key minus ``STALE_GRACE_MS``?"""
        try:
            written = datetime.fromisoformat(entry.timestamp).timestamp() * 1000
        except ValueError:
            return False
        return written >= self.created_ms - STALE_GRACE_MS

    def admits(self, entry: InboxEntry) -> bool:
        """Signed by this key and not stale (``LeadVerifier`` also refuses replays)."""
        return self.fresh(entry) and self.signed(entry)

    def by_person(self, entry: InboxEntry, recipient: str) -> bool:
        """Does ``entry`` carry ``author: person`` with an ``author_sig`` this key made for ``recipient``?"""
        if entry.author != "person" or not entry.author_sig:
            return False
        return self.verifies(entry.author_sig, author_bytes(entry, recipient)) and self.fresh(entry)


def verify_entry(entry: InboxEntry, verify_key_arg: str) -> bool:
    """Is ``entry`` signed by the key in ``verify_key_arg`` and not older than that key allows?"""
    return VerifyKey.parse(verify_key_arg).admits(entry)


class LeadVerifier:
    """What a teammate takes as the lead's: entries its key admits, each ``msg_id`` once.

    ``taken`` starts as the ids the teammate's transcript records as delivered
    (so it survives a restart) and grows through ``took``; an entry still
    pending is not "taken", however often it is looked at.
    """

    def __init__(self, key: VerifyKey | None, taken: Iterable[str]) -> None:
        self.key = key
        self._taken = set(taken)

    def verified(self, entry: InboxEntry) -> bool:
        """Signed by the lead's key, not stale, and not a replay of an entry taken in before."""
        if self.key is None or not entry.msg_id or entry.msg_id in self._taken:
            return False
        return self.key.admits(entry)

    def by_person(self, entry: InboxEntry, recipient: str) -> bool:
        """A person chose ``entry``'s words, for ``recipient``: its author signature verifies, it is not stale,
        and its ``msg_id`` was not taken in before. False for everything a model wrote, signed as the lead or not."""
        if self.key is None or not entry.msg_id or entry.msg_id in self._taken:
            return False
        return self.key.by_person(entry, recipient)

    def took(self, ids: Iterable[str]) -> None:
        """Record ids the teammate has taken in (delivered into its conversation, or consumed as an answer)."""
        self._taken.update(ids)
