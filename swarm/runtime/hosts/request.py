"""A spawn request as the lead signs it and a host checks it: starting a process on another machine.

The lead signs the request's document with its Ed25519 key (``core.signing.LeadKey``,
the key that signs its messages) over ``SCHEME`` and the document's canonical JSON.
A host acts on a request only when (``check``):

- the signature verifies with the document's ``lead_verify_key`` (a changed byte anywhere fails it);
- it is fresh: made less than ``MAX_AGE_MS`` ago (and not from the future beyond ``SKEW_MS``);
- that key is one the host trusts (``hosts.trust``): else the verdict is ``UNTRUSTED`` and the host
  keeps the request waiting (never running it) until its person trusts the key or the lead gives up;
- its ``requestId`` was never accepted before (``HostRows.accept_once``: a replay is refused).
"""

from __future__ import annotations

import json
import socket
import uuid
from collections.abc import Collection

from pydantic import BaseModel, ConfigDict, Field

from swarm.core.clock import now_ms
from swarm.core.signing import LeadKey, VerifyKey, b64url
from swarm.errors import UsageError
from swarm.runtime.hosts.trust import fingerprint

SCHEME = "swarm-spawn-request-v1"
MAX_AGE_MS = 300_000
"""A request older than this (5 min) is refused: the lead gave up on it long ago."""
SKEW_MS = 60_000
"""Clock skew between the lead's machine and a host that is tolerated."""
UNTRUSTED = "signed by a lead key this host does not trust"
"""The verdict that keeps a request waiting (not refused) until the host's person trusts its key."""


class PlacedSpawn(BaseModel):
    """What a host needs to start the teammate: all of it is signed."""

    model_config = ConfigDict(extra="forbid")

    request_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    created_ms: int = Field(default_factory=now_ms)
    team: str
    name: str
    host: str | None = None
    labels: list[str] = []
    epoch: int = 1
    agent_type: str = "general-purpose"
    model: str | None = None
    permission_mode: str = "default"
    backend: str = "auto"
    prompt: str
    """The first task, for the host's checks; the lead sends it to the teammate's inbox itself, signed."""
    playbook_text: str | None = None
    """An offline scripted model's playbook, carried (no shared paths)."""
    lead_verify_key: str
    lead_machine: str = Field(default_factory=socket.gethostname)
    """Where the lead runs, shown to a host's person asked to trust its key (a hint, not proof)."""
    repo: str | None = None
    """A git remote: the host clones it and checks out ``swarm/<team>/<name>`` at ``base`` (``hosts.code``)."""
    base: str | None = None
    """The commit (sha) the teammate's branch starts from, pushed to ``swarm/<team>/base`` by the lead."""


def signed_bytes(doc: PlacedSpawn) -> bytes:
    body = json.dumps(doc.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return f"{SCHEME}\n{body}".encode()


def sign(doc: PlacedSpawn, key: LeadKey) -> str:
    return b64url(key.private.sign(signed_bytes(doc)))


def check(raw: dict[str, object], signature: str, trusted: Collection[str],
          now: int | None = None) -> PlacedSpawn | str:
    """The request when it may run here, else why not (one line; ``UNTRUSTED`` when only the trust is missing).

    ``trusted``: fingerprints (``hosts.trust.fingerprint``) of the keys this host trusts."""
    try:
        doc = PlacedSpawn.model_validate(raw)
    except ValueError:
        return "not a spawn request document"
    try:
        key = VerifyKey.parse(doc.lead_verify_key)
    except UsageError:
        return "bad signature"
    if not key.verifies(signature, signed_bytes(doc)):
        return "bad signature"
    current = now_ms() if now is None else now
    if doc.created_ms < current - MAX_AGE_MS or doc.created_ms > current + SKEW_MS:
        return "stale request (made too long ago, or the clocks disagree)"
    if fingerprint(doc.lead_verify_key) not in trusted:
        return UNTRUSTED
    return doc
