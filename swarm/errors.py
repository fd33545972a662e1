"""The project's exception tree.

Every error a user can cause or meet is one of these, with a message that says
what was wrong and what to do. Third-party errors are translated into them at
one boundary (``raise ... from exc``); the CLI catches only ``SwarmError``.

    SwarmError
    ├── UsageError            bad input: names, sizes, arguments (exit 2)
    │   └── InvalidNameError
    ├── NotFoundError         unknown team, member, request, file
    ├── ConflictError         the thing exists already / is still active
    ├── LockTimeoutError      a lock was held longer than the bounded wait
    ├── CorruptFileError      a file could not be parsed (after quarantine)
    ├── StorageError          a file could not be read or written: disk full, I/O
    │                         error, permissions, a directory/FIFO where a file belongs
    ├── BackendError          tmux / subprocess / git could not do its job
    └── ModelError            a model provider failed after its retries
"""

from __future__ import annotations

TYPE_CHECKING = False  # not ``typing.TYPE_CHECKING``: ``swarm`` finds its CLI server through modules that import
if TYPE_CHECKING:     # this one, and importing typing would cost that path ~3 ms
    from collections.abc import Callable


class SwarmError(Exception):
    """Base of every error swarm raises on purpose."""

    exit_code = 1


class UsageError(SwarmError):
    """The input was wrong; fixing the command fixes it."""

    exit_code = 2


class InvalidNameError(UsageError):
    """A team or agent name that cannot become a path component."""


class NotFoundError(SwarmError):
    """A team, member, request or file that does not exist."""


class ConflictError(SwarmError):
    """The operation clashes with existing state."""


class LockTimeoutError(SwarmError):
    """A file lock was not acquired within its bounded wait."""


class LockBusyError(LockTimeoutError):
    """Someone else held the lock for the whole wait (as opposed to a lock that cannot be used at all).

    ``holder`` says who holds it and what to do (``swarm.core.flock.who_holds``,
    which reads ``/proc/locks``): it is asked only when the message is first
    rendered, so a caller that tries a busy lock again and again and throws the
    error away (the spool's retry loop) never pays for it.
    """

    def __init__(self, message: str, holder: Callable[[], str] | None = None) -> None:
        super().__init__(message)
        self._message = message
        self._holder = holder
        self._rendered: str | None = None

    def __str__(self) -> str:
        if self._rendered is None:
            holder, self._holder = self._holder, None
            self._rendered = self._message if holder is None else f"{self._message}; {holder()}"
        return self._rendered


class CorruptFileError(SwarmError):
    """A JSON file did not parse."""


class StorageError(SwarmError):
    """The file system refused a read or write; nothing was half-done (the old file stays)."""


class BackendError(SwarmError):
    """A process backend (tmux, subprocess) or git failed."""


class ModelError(SwarmError):
    """A model provider failed and will not be retried further."""


class AnswerInterrupted(SwarmError):
    """The model's streamed answer was abandoned because its turn was interrupted (not a failure: nothing to retry).

    The agent loop turns it into the turn's ``interrupted`` end, as an interrupt between steps does.
    """


class PromptTooLong(ModelError):
    """The API refused a request because its prompt does not fit the model's window (a 400 that says so).

    The agent loop answers it by compacting the conversation and trying once more.
    """
