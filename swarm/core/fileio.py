"""Raw file I/O that every swarm file goes through: read, replace, append.

The guarantees the on-disk contract asks for (PROTOCOL.md, "Locking and
writes") live here once, for the JSON files, the JSON Lines records and the
agent's Write/Edit tools alike:

- ``read_regular`` reads only a regular file. A directory, FIFO, socket or
  device where a file belongs is an error (a FIFO is opened non-blocking, so
  it never hangs the reader).
- ``replace_file`` writes a new temp file beside the target, created
  exclusively and never through a symlink (``O_CREAT|O_EXCL|O_NOFOLLOW``,
  a unique ``<name>.tmp.<pid>.<hex>``), checks that every byte was written,
  optionally fsyncs, and ``os.replace``-s it over the target. On any failure
  (a full disk, an I/O error, a signal) the temp file is removed and the old
  file stays as it was.
- ``write_all`` loops over short writes and raises when the disk refuses.

Everything here raises ``OSError``; ``storage_error`` turns one into the
one-line ``StorageError`` the CLI prints, at the caller's boundary.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from swarm.core.home import FILE_MODE
from swarm.errors import StorageError

READ_CHUNK = 1 << 20

_KINDS = {stat.S_IFDIR: "a directory", stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket",
          stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device", stat.S_IFLNK: "a symlink"}

_HINTS = {
    errno.ENOSPC: "the disk is full; free some space and retry",
    errno.EDQUOT: "the disk quota is used up; free some space and retry",
    errno.EFBIG: "the file size limit was reached; raise the limit (ulimit -f) and retry",
    errno.EIO: "the disk reported an I/O error; check the disk",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "check the owner and mode of the file and its directory",
    errno.EPERM: "check the owner and mode of the file and its directory",
    errno.ELOOP: "a symlink (or a symlink loop) is where swarm keeps a file; move it aside",
    errno.ENOTDIR: "a parent of it is not a directory; move that aside",
    errno.EISDIR: "it should be a regular file; move it aside",
}


class NotRegularFileError(OSError):
    """A directory, FIFO, socket or device where a regular file belongs."""


def check_regular(mode: int, path: Path) -> None:
    """Raise ``NotRegularFileError`` unless ``mode`` (a ``st_mode``) is a regular file's."""
    if not stat.S_ISREG(mode):
        kind = _KINDS.get(stat.S_IFMT(mode), "not a file")
        raise NotRegularFileError(errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL,
                                  f"is {kind}, not a regular file", str(path))


def open_regular(path: Path) -> int:
    """A read-only descriptor on the regular file ``path`` (blocking, close-on-exec).

    Raises ``FileNotFoundError`` if it is missing and ``NotRegularFileError``
    if something else is there; a FIFO is opened non-blocking for the check,
    so this never hangs.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        check_regular(os.fstat(fd).st_mode, path)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: Path) -> tuple[bytes, int] | None:
    """The bytes and permission bits of the regular file ``path``; None if it does not exist."""
    try:
        fd = open_regular(path)
    except FileNotFoundError:
        return None
    try:
        mode = stat.S_IMODE(os.fstat(fd).st_mode)
        chunks = []
        while chunk := os.read(fd, READ_CHUNK):
            chunks.append(chunk)
        return b"".join(chunks), mode
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd``, looping over short writes; OSError if the disk refuses."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:  # a regular file never does this without an error; refuse to spin
            raise OSError(errno.EIO, "the write made no progress")
        view = view[written:]


def replace_file(path: Path, data: bytes, *, fsync: bool = True, mode: int | None = None,
                 create_mode: int = FILE_MODE) -> None:
    """Replace ``path`` with ``data`` atomically (see the module docstring).

    ``mode`` is given to the new file exactly (pass the old file's mode to keep
    it); otherwise it gets ``create_mode`` less the umask. ``path`` itself is
    replaced, never followed: a symlink there is replaced by the file.
    """
    tmp, fd = _create_temp(path, create_mode)
    try:
        try:
            write_all(fd, data)
            if mode is not None:
                os.fchmod(fd, mode)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        _remove_quietly(tmp)
        raise


def _create_temp(target: Path, create_mode: int) -> tuple[Path, int]:
    """A new, empty file beside ``target`` that nobody else could have prepared, and its descriptor."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(16):
        tmp = target.with_name(f"{target.name}.tmp.{os.getpid()}.{os.urandom(6).hex()}")
        try:
            return tmp, os.open(tmp, flags, create_mode)
        except FileExistsError:  # a leftover, or something planted: never reuse it
            continue
    raise FileExistsError(errno.EEXIST, "no free temp file name after 16 tries", str(target))


def _remove_quietly(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:  # already gone, or the directory went away; the original error matters
        pass


def storage_error(exc: OSError, path: Path | str | None, verb: str) -> StorageError:
    """One line for an OSError met while ``verb``-ing ``path``: what failed, and what to do."""
    where = exc.filename or path
    reason = exc.strerror or str(exc) or type(exc).__name__
    hint = _HINTS.get(exc.errno or 0)
    if isinstance(exc, NotRegularFileError):
        hint = "move it aside (swarm keeps a regular file there)"
    return StorageError(f"cannot {verb} {where}: {reason}" + (f"; {hint}" if hint else ""))
