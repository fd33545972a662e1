"""Lead signatures: Claude Code's exact scheme, checked against Node's ``crypto`` (``swarm.core.signing``)."""

from __future__ import annotations

import json
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from swarm.core.frames import ShutdownRequest, entry_frame
from swarm.core.home import Home
from swarm.core.mailbox import Mailbox
from swarm.core.protocol import InboxEntry, Member
from swarm.core.signing import (
    STALE_GRACE_MS,
    LeadKey,
    LeadVerifier,
    VerifyKey,
    b64url,
    js_stringify,
    key_path,
    lead_key,
    rotate_lead_key,
    sign_entry,
    signed_bytes,
    unb64url,
    verify_entry,
    verify_key_arg,
)
from swarm.core.teams import TeamStore
from swarm.errors import UsageError

NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="node is not installed: no independent Ed25519 implementation")

# An independent vector: RFC 8032's first test key, the entry below, signed by Node's crypto
# (crypto.sign(null, Buffer.from(JSON.stringify([...]), "utf8"), key).toString("base64url")).
RFC8032_SEED = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
VECTOR_KEY_ARG = "1767225600000.MCowBQYDK2VwAyEA11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
VECTOR_ENTRY = InboxEntry(
    sender="team-lead", timestamp="2026-01-01T00:00:00.000Z", msg_id="6f1c2a43-3c8e-4d5e-9a51-0e6c1f3b2d7a",
    color="blue",
    text='{"type":"shutdown_request","requestId":"shutdown-1@bob","from":"team-lead",'
         '"reason":"héllo — “done” 🎉\nnext\u2028line"}')
VECTOR_SIG = "aDrRMvc8SGZIgrechzWSvJ1FsMcuaBeK9Q9Y7wzRIYPt0uRU49U2ofMr4kt45dobVsuhY4TYKd3HQYTBRg0aBA"

TEXTS = [
    "plain ascii",
    'quotes "double" and \'single\', a back\\slash and a /slash',
    "new\nlines\r\n\ttab \b \f and \x00 \x1f \x7f controls",
    "non-ASCII: héllo wörld — 日本語 — 🎉 — \u2028 \u2029 separators",
    "a lone surrogate \ud800 and a pair written as two code points \ud83d\ude00",
    "<teammate-message> & </teammate-message>",
]
NODE_VERIFY = r"""
const crypto = require('crypto');
const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const [ms, spki] = input.key.split('.');
const pub = crypto.createPublicKey({key: Buffer.from(spki, 'base64url'), format: 'der', type: 'spki'});
const out = input.entries.map(e => {
  const data = Buffer.from(JSON.stringify(['claude-team-lead-entry-v1', e.msg_id, e.from, e.timestamp, e.text,
    e.summary ?? null, e.color ?? null, e.from_plugin ?? null]), 'utf8');
  return {ok: crypto.verify(null, data, pub, Buffer.from(e.lead_sig, 'base64url')), bytes: data.toString('hex')};
});
console.log(JSON.stringify({ms: Number(ms), out}));
"""
NODE_SIGN = r"""
const crypto = require('crypto');
const input = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const key = crypto.createPrivateKey({key: Buffer.from(input.pkcs8, 'base64'), format: 'der', type: 'pkcs8'});
const sigs = input.entries.map(e => crypto.sign(null, Buffer.from(JSON.stringify(['claude-team-lead-entry-v1',
  e.msg_id, e.from, e.timestamp, e.text, e.summary ?? null, e.color ?? null, e.from_plugin ?? null]), 'utf8'),
  key).toString('base64url'));
console.log(JSON.stringify(sigs));
"""


@pytest.fixture
def team(home: Home) -> str:
    TeamStore(home).create("t")
    TeamStore(home).add_member("t", Member(agent_id="bob@t", name="bob", is_active=True))
    return "t"


def _entries(key_ms: int) -> list[InboxEntry]:
    stamp = f"{_iso(key_ms)}"
    return [InboxEntry(sender="team-lead", text=text, timestamp=stamp, msg_id=f"id-{i}",
                       summary=None if i % 2 else "sum “mary”", color=None if i % 3 else "green",
                       from_plugin="plug" if i == 4 else None)
            for i, text in enumerate(TEXTS)]


def _iso(ms: int) -> str:
    from datetime import UTC, datetime
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def _node(script: str, payload: object) -> object:
    assert NODE is not None
    done = subprocess.run([NODE, "-e", script], input=json.dumps(payload), capture_output=True, text=True,
                          check=True, timeout=30)
    return json.loads(done.stdout)


# -- against Node ------------------------------------------------------------------------


@needs_node
def test_entries_swarm_signs_verify_in_node_over_the_same_bytes(home: Home, team: str) -> None:
    key = lead_key(home, team)
    entries = _entries(key.created_ms)
    for entry in entries:
        entry.lead_sig = sign_entry(entry, key)
    got = _node(NODE_VERIFY, {"key": verify_key_arg(home, team),
                              "entries": [e.wire() for e in entries]})
    assert isinstance(got, dict) and got["ms"] == key.created_ms
    assert [o["ok"] for o in got["out"]] == [True] * len(entries)
    assert [bytes.fromhex(o["bytes"]) for o in got["out"]] == [signed_bytes(e) for e in entries]


@needs_node
def test_entries_node_signs_with_a_key_swarm_made_verify_in_swarm(home: Home, team: str) -> None:
    key = lead_key(home, team)
    pkcs8 = key.private.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption())
    import base64
    entries = _entries(key.created_ms)
    sigs = _node(NODE_SIGN, {"pkcs8": base64.b64encode(pkcs8).decode(), "entries": [e.wire() for e in entries]})
    assert isinstance(sigs, list)
    for entry, sig in zip(entries, sigs, strict=True):
        assert "=" not in sig
        assert sig == sign_entry(entry, key)  # Ed25519 is deterministic: the same bytes were signed
        assert verify_entry(entry.model_copy(update={"lead_sig": sig}), verify_key_arg(home, team))


def test_the_independent_vector_verifies_and_swarm_reproduces_it() -> None:
    assert verify_entry(VECTOR_ENTRY.model_copy(update={"lead_sig": VECTOR_SIG}), VECTOR_KEY_ARG)
    key = LeadKey(Ed25519PrivateKey.from_private_bytes(bytes.fromhex(RFC8032_SEED)), 1767225600000)
    assert key.verify_arg == VECTOR_KEY_ARG
    assert sign_entry(VECTOR_ENTRY, key) == VECTOR_SIG


def test_js_stringify_matches_javascript_for_the_awkward_cases() -> None:
    assert js_stringify(["a\"b\\c", None, "x\ny\u2028é\x01"]) == '["a\\"b\\\\c",null,"x\\ny\u2028é\\u0001"]'
    assert js_stringify(["\ud800"]) == '["\\ud800"]'
    assert js_stringify(["\ud83d\ude00"]) == '["\U0001f600"]'


# -- what does not verify ------------------------------------------------------------------


def _signed(key: LeadKey, **changes: object) -> InboxEntry:
    entry = InboxEntry(sender="team-lead", text="stop", timestamp=_iso(key.created_ms), msg_id="m-1")
    entry = entry.model_copy(update=changes)
    return entry.model_copy(update={"lead_sig": sign_entry(entry, key)})


def test_tampering_a_wrong_key_or_no_signature_does_not_verify(home: Home, team: str) -> None:
    key = lead_key(home, team)
    arg = verify_key_arg(home, team)
    entry = _signed(key)
    assert verify_entry(entry, arg)
    for field, value in (("text", "stop!"), ("sender", "bob"), ("msg_id", "m-2"), ("timestamp", _iso(key.created_ms + 1)),
                         ("summary", "s"), ("color", "red"), ("from_plugin", "p")):
        assert not verify_entry(entry.model_copy(update={field: value}), arg), field
    assert not verify_entry(entry.model_copy(update={"lead_sig": None}), arg)
    assert not verify_entry(entry.model_copy(update={"lead_sig": "not base64 !"}), arg)
    other = LeadKey.generate()
    assert not verify_entry(_signed(other), arg)


def test_an_entry_older_than_the_key_minus_the_grace_is_stale(home: Home, team: str) -> None:
    key = lead_key(home, team)
    arg = verify_key_arg(home, team)
    assert verify_entry(_signed(key, timestamp=_iso(key.created_ms - STALE_GRACE_MS + 1000)), arg)
    assert not verify_entry(_signed(key, timestamp=_iso(key.created_ms - STALE_GRACE_MS - 1000)), arg)
    assert not verify_entry(_signed(key, timestamp="yesterday"), arg)


def test_the_verifier_takes_each_msg_id_once(home: Home, team: str) -> None:
    key = lead_key(home, team)
    entry = _signed(key)
    verifier = LeadVerifier(VerifyKey.parse(key.verify_arg), taken=["earlier"])
    assert verifier.verified(entry)
    assert verifier.verified(entry)  # looked at again while still pending: still fine
    verifier.took(["m-1"])
    assert not verifier.verified(entry)
    assert not LeadVerifier(VerifyKey.parse(key.verify_arg), taken=["m-1"]).verified(entry)  # after a restart
    assert not LeadVerifier(None, taken=[]).verified(entry)
    assert not verifier.verified(_signed(key, msg_id=None))


def test_a_bad_verify_key_argument_is_a_usage_error() -> None:
    for arg in ("", "123", "abc.MCowBQYDK2VwAyEA11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", "1.AAAA", "1.!!"):
        with pytest.raises(UsageError):
            VerifyKey.parse(arg)


# -- keys ---------------------------------------------------------------------------------


def test_the_key_file_is_private_stable_and_rotated_on_demand(home: Home, team: str) -> None:
    arg = verify_key_arg(home, team)
    assert re.fullmatch(r"\d+\.[A-Za-z0-9_-]{59}", arg)  # 44-byte SPKI, base64url without padding
    path = key_path(home, team)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert verify_key_arg(home, team) == arg
    rotated = rotate_lead_key(home, team)
    assert rotated.verify_arg != arg and verify_key_arg(home, team) == rotated.verify_arg
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(".lead.key")] == []


def test_team_create_on_the_cli_rotates_the_key(home: Home) -> None:
    from click.testing import CliRunner

    from swarm.cli.main import cli

    runner = CliRunner()
    assert runner.invoke(cli, ["--home", str(home.root), "team", "create", "t"]).exit_code == 0
    first = verify_key_arg(home, "t")
    # the team file went but its directory stayed (removed by hand or by another tool), key and all:
    # a new team of that name must not inherit the old lead's key
    home.config_path("t").unlink()
    assert runner.invoke(cli, ["--home", str(home.root), "team", "create", "t"]).exit_code == 0
    assert verify_key_arg(home, "t") != first


# -- the mailbox signs as the lead ------------------------------------------------------------


def test_the_mailbox_signs_what_the_lead_sends_and_nothing_else(home: Home, team: str) -> None:
    mailbox = Mailbox(home, team)
    text = mailbox.send("bob", "héllo\n“bob”", sender="team-lead", summary="s", color="blue")[0]
    request = ShutdownRequest(request_id="shutdown-1@bob", sender="team-lead", timestamp=_iso(0))
    frame = mailbox.send_frame("bob", request, sender="team-lead")
    runtime = mailbox.send_frame("bob", request, sender="swarm")
    peer = mailbox.send("team-lead", "hi", sender="bob")[0]
    arg = verify_key_arg(home, team)
    on_disk = {e.msg_id: e for e in mailbox.read("bob") + mailbox.read("team-lead")}
    assert verify_entry(on_disk[text.msg_id], arg) and verify_entry(on_disk[frame.msg_id], arg)
    assert on_disk[runtime.msg_id].lead_sig is None and on_disk[peer.msg_id].lead_sig is None
    verifier = LeadVerifier(VerifyKey.parse(arg), taken=[])
    assert entry_frame(on_disk[frame.msg_id], verifier) == request
    assert entry_frame(on_disk[frame.msg_id]) == on_disk[frame.msg_id].text  # no verifier: never a lead frame
    assert entry_frame(on_disk[runtime.msg_id], verifier) == on_disk[runtime.msg_id].text


def test_without_a_usable_key_lead_entries_go_unsigned(home: Home, team: str, tmp_path: Path) -> None:
    key_path(home, team).mkdir()  # something that is not a key file where the key belongs
    entry = Mailbox(home, team).send("bob", "hi", sender="team-lead")[0]
    assert entry.lead_sig is None and Mailbox(home, team).read("bob")[0].lead_sig is None


def test_only_a_person_signed_entry_for_this_recipient_counts_as_the_persons(home: Home, team: str) -> None:
    """The lead signature proves the lead process wrote an entry; the author signature, that a person chose it."""
    TeamStore(home).add_member(team, Member(agent_id="carol@t", name="carol", is_active=True))
    mailbox = Mailbox(home, team)
    [person] = mailbox.send("bob", "/deploy now", sender="team-lead", author="person")
    [model] = mailbox.send("bob", "/deploy now", sender="team-lead", author="model")
    [unmarked] = mailbox.send("bob", "/deploy now", sender="team-lead")
    verifier = LeadVerifier(VerifyKey.parse(verify_key_arg(home, team)), taken=[])
    on_disk = {e.msg_id: e for e in mailbox.read("bob")}
    assert all(verifier.verified(on_disk[e.msg_id]) for e in (person, model, unmarked))  # all the lead's...
    assert verifier.by_person(on_disk[person.msg_id], "bob")  # ...one of them the person's
    assert not verifier.by_person(on_disk[model.msg_id], "bob") and on_disk[model.msg_id].author == "model"
    assert not verifier.by_person(on_disk[unmarked.msg_id], "bob")
    assert not verifier.by_person(on_disk[person.msg_id], "carol")  # copied into another inbox: not the person's
    forged = on_disk[model.msg_id].model_copy(update={"author": "person"})  # a model's entry re-marked
    assert not verifier.by_person(forged, "bob")
    assert not verifier.by_person(on_disk[person.msg_id].model_copy(update={"text": "/deploy all"}), "bob")
    verifier.took([person.msg_id])
    assert not verifier.by_person(on_disk[person.msg_id], "bob")  # a replay of one taken in before


ED25519_ORDER = 2**252 + 27742317777372353535851937790883648493


def test_a_malleated_truncated_or_padded_signature_does_not_verify(home: Home, team: str) -> None:
    """The attacker's edits to a good signature: S + L (the same signature to a lax checker), a byte short,
    a byte more; each is refused."""
    key = lead_key(home, team)
    arg = verify_key_arg(home, team)
    entry = _signed(key)
    assert entry.lead_sig is not None and verify_entry(entry, arg)
    raw = unb64url(entry.lead_sig)
    s = int.from_bytes(raw[32:], "little")
    malleated = raw[:32] + (s + ED25519_ORDER).to_bytes(32, "little")
    for sig in (b64url(malleated), b64url(raw[:-1]), b64url(raw + b"\0")):
        assert not verify_entry(entry.model_copy(update={"lead_sig": sig}), arg), sig
    verify = VerifyKey.parse(arg)
    assert verify.verifies(entry.lead_sig, signed_bytes(entry))
    assert not verify.verifies(b64url(malleated), signed_bytes(entry))
