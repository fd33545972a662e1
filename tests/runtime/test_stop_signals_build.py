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


def test_validators_built_already_are_not_built_again() -> None:
    """A teammate forked from the CLI server calls ``build_validators`` on validators the server built: the same
    objects stay, shared with the server (built again, each teammate held ~2.5 MiB more of its own)."""
    enter = textwrap.dedent("""
        from swarm.core.frames import build_validators
        build_validators()
        before = (frames._FRAME.validator, InboxEntry.__pydantic_validator__, TeamFile.__pydantic_validator__)
        build_validators()
        after = (frames._FRAME.validator, InboxEntry.__pydantic_validator__, TeamFile.__pydantic_validator__)
        assert all(a is b for a, b in zip(before, after)), "built again"
    """)
    assert _probe(enter) == "built"
