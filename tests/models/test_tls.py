"""Real-model clients share one TLS context per process and CA setting (``swarm.models.tls``).

Each SDK client built the default way loaded the system CA bundle into a
context of its own: ~1.5 MiB only that teammate held, ~20 ms of CPU. Counted,
not timed: the context objects the clients use (one), and in a child forked
after the context was built (as a teammate is forked from the CLI server that
ran ``preload_sdk``), the pages building its client copies.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import sys

import anthropic
import pytest

from swarm.models.credentials import Credentials
from swarm.models.tls import tls_context


def _context(client: anthropic.Anthropic) -> ssl.SSLContext:
    return client._client._transport._pool._ssl_context  # type: ignore[attr-defined,no-any-return]


def _client() -> anthropic.Anthropic:
    return Credentials("api", api_key="k").client(anthropic, base_url="http://127.0.0.1:9", env={}, max_retries=0)


def test_clients_share_the_process_context_and_it_verifies(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    first, second = _client(), _client()
    try:
        assert _context(first) is _context(second) is tls_context()
        assert tls_context().verify_mode == ssl.CERT_REQUIRED and tls_context().check_hostname
        assert tls_context().cert_store_stats()["x509_ca"] > 0, "the system's CA bundle is loaded"
    finally:
        first.close()
        second.close()


def test_another_ca_setting_gets_its_own_context(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    default = tls_context()
    monkeypatch.setenv("SSL_CERT_FILE", ssl.get_default_verify_paths().openssl_cafile)
    assert tls_context() is not default, "SSL_CERT_FILE is honoured as the HTTP stack would honour it"


FORKED = r"""
import json, os, resource, anthropic
from swarm.models.credentials import Credentials
from swarm.models.tls import tls_context
if os.environ.get("WARM") == "1":
    tls_context()
def build():
    c = Credentials("api", api_key="k").client(anthropic, base_url="http://127.0.0.1:9", env={}, max_retries=0)
    c.close()
r, w = os.pipe()
if os.fork() == 0:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    build()
    os.write(w, b"%d" % (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before))
    os._exit(0)
os.close(w)
print(json.dumps(int(os.read(r, 64))))
"""


def test_a_child_forked_after_the_context_was_built_copies_far_fewer_pages_for_its_client() -> None:
    def faults(warm: str) -> int:
        env = {k: v for k, v in __import__("os").environ.items() if not k.startswith(("SSL_CERT_", "ANTHROPIC_"))}
        done = subprocess.run([sys.executable, "-c", FORKED], env={**env, "WARM": warm}, capture_output=True,
                              text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        return int(json.loads(done.stdout))

    cold, warm = faults("0"), faults("1")
    assert warm < 0.5 * cold, (cold, warm)  # measured: ~3,200 against ~730 (the CA bundle is ~1.5 MiB)
