"""URLs as errors, logs and listings may show them: a database's never with its password, a git remote's
never with its credentials."""

from __future__ import annotations

import re

_USERINFO = re.compile(r"^(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<user>[^:@/]*):(?P<password>[^@/]*)@", re.I)
_QUERY_PASSWORD = re.compile(r"(?P<key>[?&]password=)[^&]*", re.I)
_KEYWORD_PASSWORD = re.compile(r"(?P<key>\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", re.I)


def redact_url(url: str) -> str:
    """``postgresql://user:secret@host/db`` -> ``postgresql://user:***@host/db`` (also ``?password=``)."""
    text = _USERINFO.sub(lambda m: f"{m['scheme']}{m['user']}:***@", url)
    return _QUERY_PASSWORD.sub(lambda m: f"{m['key']}***", text)


_HTTP_USERINFO = re.compile(r"^(?P<scheme>https?://)[^@/]+@", re.I)


def redact_remote(url: str) -> str:
    """A git remote as it may be shown: ``https://user:token@host/…`` and ``https://token@host/…`` lose their
    userinfo (``***@``); ``git@host:…`` and ``ssh://git@host/…`` name a user, not a secret, and stay."""
    return redact_url(_HTTP_USERINFO.sub(lambda m: f"{m['scheme']}***@", url))


def redact_text(text: str, url: str) -> str:
    """``text`` (a driver's error message) with the password of ``url`` and any ``password=…`` blanked."""
    found = _USERINFO.match(url)
    secrets = [found["password"]] if found and found["password"] else []
    query = re.search(r"[?&]password=([^&]*)", url, re.I)
    if query and query[1]:
        secrets.append(query[1])
    from urllib.parse import unquote

    for secret in secrets:
        for form in {secret, unquote(secret)}:
            if form:
                text = text.replace(form, "***")
    text = text.replace(url, redact_url(url))
    return _KEYWORD_PASSWORD.sub(lambda m: f"{m['key']}***", text)
