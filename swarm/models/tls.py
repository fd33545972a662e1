"""The TLS context the SDK's HTTP clients verify Claude's certificate with: built once per process and trust set.

Each SDK client the default way builds its own context, and each one loads
the system's CA bundle (~140 certificates): ~1.5 MiB that only that process
holds and ~20 ms of CPU, in every real-model teammate. Built here instead,
once per CA setting (``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` as the process
environment has them now, which is what the HTTP stack itself would read), and
built by the CLI server before it forks (``preload_sdk``): a teammate forked
from it with the same setting shares those pages and loads nothing. The
context is the one ``httpx2`` makes for ``verify=True`` (the same trust, the
same checks); only who pays for it changes. A teammate whose CA setting
differs builds its own.
"""

from __future__ import annotations

import functools
import os
import ssl

CA_VARIABLES = ("SSL_CERT_FILE", "SSL_CERT_DIR")
"""The environment the default context reads (``httpcore2.default_ssl_context``): a cache key."""


def tls_context() -> ssl.SSLContext:
    """The default verifying context for the CA setting in ``os.environ`` now (one per setting and process)."""
    return _built(tuple(os.environ.get(name) for name in CA_VARIABLES))


@functools.cache
def _built(setting: tuple[str | None, ...]) -> ssl.SSLContext:
    import httpx2

    return httpx2.create_ssl_context(verify=True, trust_env=True)
