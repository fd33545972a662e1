"""A swarm process's start-up: imports without the cyclic garbage collector.

Loading the CLI or a teammate creates a few hundred thousand objects (modules,
classes, pydantic schemas, dataclass methods) that all live until the process
ends. The collector keeps scanning them while they are made, which costs a
teammate about a fifth of its start-up CPU, and in every later full collection
for as long as it runs. So a process's entry point calls ``hold_collector``
before its heavy imports and ``startup_done`` once they are done: what exists then
is moved out of the collector's sight for good (``gc.freeze``) and collection
resumes for everything made after.

Only the two program entry points call these (``swarm`` and ``python -m
swarm.teammate``); code that imports swarm as a library, tests included,
keeps its own collector settings.
"""

from __future__ import annotations

import gc


def hold_collector() -> None:
    """No cyclic collection until ``startup_done``: start-up objects are all kept anyway."""
    gc.disable()


def startup_done() -> None:
    """Start-up is over: freeze what it made and collect again. Does nothing unless ``hold_collector`` ran."""
    if gc.isenabled():
        return
    gc.freeze()
    gc.enable()
