"""``preload_sdk``: what a real-model teammate's first request would import and build, done ahead (the CLI server
runs it before it forks), without a byte on the network and without a thread.

Counted in a fresh interpreter: the modules a first request to the fake API
imports after the preload (none), against those it imports without it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from tests.fakes import FakeAnthropicServer, text_reply

FIRST_REQUEST = r"""
import json, sys, threading
from swarm.models.anthropic_provider import AnthropicProvider, preload_sdk
from swarm.models.base import ModelRequest
from swarm.models.messages import Message, TextBlock
if sys.argv[2] == "preload":
    preload_sdk()
threads = threading.active_count()
before = set(sys.modules)
provider = AnthropicProvider(env={"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": sys.argv[1]})
answer = provider.complete(ModelRequest(messages=[Message(role="user", content=[TextBlock(text="hi")])]))
provider.close()
print(json.dumps({"new": sorted(set(sys.modules) - before), "threads": threads, "text": answer.content[0].text}))
"""


def _first_request(api: FakeAnthropicServer, mode: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", FIRST_REQUEST, api.base_url, mode], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_after_the_preload_a_first_request_imports_nothing_and_nothing_was_sent(api: FakeAnthropicServer) -> None:
    api.otherwise(text_reply("hello"))
    cold = _first_request(api, "cold")
    assert len([m for m in cold["new"] if m.startswith("anthropic")]) > 100  # what the preload takes over
    warm = _first_request(api, "preload")
    assert warm["new"] == [], "a module a forked teammate would import (and hold unshared) at its first request"
    assert warm["threads"] == 1, "the preload left a thread: a server that forks must have none"
    assert warm["text"] == "hello"
    assert len(api.requests) == 2, "the preload answered itself; only the two real first requests reached the API"
