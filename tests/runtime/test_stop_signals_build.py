"""A process that takes stop signals as exceptions has its validators built first (a fresh interpreter each)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

PROBE = textwrap.dedent("""
    from swarm.core import frames
    from swarm.core.protocol import InboxEntry, TeamFile
    def built():
        return frames._FRAME.pydantic_complete and InboxEntry.__pydantic_complete__ and TeamFile.__pydantic_complete__
    assert not built(), "built at import already: the probe proves nothing"
    {enter}
    print("built" if built() else "lazy")
""")


def _probe(enter: str) -> str:
    result = subprocess.run([sys.executable, "-c", PROBE.format(enter=enter)], capture_output=True, text=True,
                            timeout=60, check=True)
    return result.stdout.strip()


def test_a_leads_stop_signals_go_in_only_once_the_validators_are_built() -> None:
    """A SIGTERM raised inside pydantic's lazy build comes out as a SchemaError (``swarm up`` ended with a
    traceback and status 1 instead of 143): once the handlers are in, no validator is left to build."""
    assert _probe("from swarm.runtime.lead_process import StopSignals\nStopSignals().__enter__()") == "built"


def test_nothing_is_built_at_import() -> None:
    """One-shot commands keep building only what they use."""
    assert _probe("pass") == "lazy"
