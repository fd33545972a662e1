"""Raw file I/O that every swarm file goes through: read, replace, append.

The guarantees the on-disk contract asks for (docs/protocol.md, "How
files are written") live here once, for the JSON files, the JSON Lines records and the
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
- ``InPlaceRecord`` is for a small record a power loss may lose, rewritten
  often by its one writer (a teammate's activity, twice a turn): written
  whole by ``replace_file`` (unsynced) the first time, then rewritten in
  place, one ``pwrite`` at offset 0 of a descriptor kept open, padded with
  spaces to the size the file already has, so it never grows or allocates
  (a full disk cannot cut it short). One system call instead of a temp
  file's six (create, write, close, rename, unlink, and the names): measured
  ~0.2 ms a write on the path from a message to the turn. A reader may catch
  a write half done (a page is copied without a lock), so a record
  written this way must let the reader tell: the activity record carries
  the same ``seq`` at its start and its end (``ActivityCodec``).
- ``renameat2`` is the one binding of that system call (``core.flock`` moves
  its lock directory with it).
- ``write_all`` loops over short writes and raises when the disk refuses.

Everything here raises ``OSError``; ``storage_error`` turns one into the
one-line ``StorageError`` the CLI prints, at the caller's boundary.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import stat
import sys
import weakref
from collections.abc import Callable
from pathlib import Path

from swarm.core.home import FILE_MODE
from swarm.errors import StorageError

READ_CHUNK = 1 << 20
MAX_READ = 1 << 30
"""The most one ``read`` asks for (Linux returns at most ~2 GiB a call)."""
AT_FDCWD = -100
RENAME_NOREPLACE = 1

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


def read_regular(path: Path, *, limit: int | None = None) -> tuple[bytes, int] | None:
    """The bytes and permission bits of the regular file ``path``; None if it does not exist.

    With ``limit``, at most ``limit + 1`` bytes are read: more than ``limit`` means the file is larger.
    One ``open``, one ``fstat`` and, for a file that does not change meanwhile, one ``read`` (asking for a byte
    more than its size: a short read is its end); reads go on to the end if it grew. Opened non-blocking, so a
    FIFO is refused without a hang; a regular file reads the same either way.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        info = os.fstat(fd)
        check_regular(info.st_mode, path)
        cap = None if limit is None else limit + 1
        chunks, size = [], 0
        ask = info.st_size + 1  # a byte more than its size
        while cap is None or size < cap:
            count = min(ask, MAX_READ) if cap is None else min(ask, MAX_READ, cap - size)
            chunk = os.read(fd, count)
            chunks.append(chunk)
            size += len(chunk)
            if len(chunk) < count:
                break  # a short read of a regular file is its end
            ask = max(ask - count, READ_CHUNK)  # it grew since the fstat: read on to the end
        return b"".join(chunks), stat.S_IMODE(info.st_mode)
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


class InPlaceRecord:
    """One small file its only writer rewrites in place (see the module docstring); not fsynced.

    Each ``write`` checks (one ``stat``) that the path is still the file the
    descriptor is open on; a file removed, replaced or never made is written
    whole by ``replace_file`` (a symlink there is replaced, never followed; a
    directory is an error and stays) and opened again. So is a record longer
    than the file: growing in place could be cut short by a full disk.
    """

    def __init__(self, path: Path, *, room: int = 0) -> None:
        self.path = path
        self.room = room
        """The size a new file is made with (its record padded): room for the records to come."""
        self._fd: int | None = None
        self._file: tuple[int, int, int] = (0, 0, 0)
        """``(st_dev, st_ino, st_size)`` of the file ``_fd`` is open on."""
        self._closer = weakref.finalize(self, close_quietly, None)

    def write(self, data: bytes) -> None:
        """Make ``data`` the record (OSError if the disk refuses; the old record then stays)."""
        fd, size = self._current()
        if fd is None or len(data) > size:
            self._rewrite(data)
            return
        data += b" " * (size - len(data))  # JSON allows trailing blanks; the file keeps its size
        if os.pwrite(fd, data, 0) != size:  # a write that does not allocate is not cut short
            raise OSError(errno.EIO, "the record was written in part", str(self.path))

    def close(self) -> None:
        if self._fd is not None:
            self._closer.detach()
            close_quietly(self._fd)
            self._fd = None

    def _current(self) -> tuple[int | None, int]:
        if self._fd is None:
            return None, 0
        try:
            info = os.stat(self.path, follow_symlinks=False)
        except FileNotFoundError:
            info = None
        if info is None or (info.st_dev, info.st_ino, info.st_size) != self._file:
            self.close()  # removed, replaced or changed under this writer
            return None, 0
        return self._fd, info.st_size

    def _rewrite(self, data: bytes) -> None:
        self.close()
        replace_file(self.path, data + b" " * (self.room - len(data)), fsync=False)
        fd = os.open(self.path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            info = os.fstat(fd)
            check_regular(info.st_mode, self.path)
        except BaseException:
            os.close(fd)
            raise
        self._fd, self._file = fd, (info.st_dev, info.st_ino, info.st_size)
        self._closer = weakref.finalize(self, close_quietly, fd)


def close_quietly(fd: int | None) -> None:
    """Close ``fd`` (None: nothing), an error ignored: for descriptors let go of at a finalizer or after a failure."""
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass


@functools.cache
def renameat2() -> Callable[[str | Path, str | Path, int], None] | None:
    """``renameat2(source, target, flags)`` from libc, raising OSError like ``os.rename``; None off Linux or old libc."""
    if sys.platform != "linux":
        return None
    try:
        call = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None

    def move(source: str | Path, target: str | Path, flags: int) -> None:
        if call(AT_FDCWD, os.fsencode(source), AT_FDCWD, os.fsencode(target), flags) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), str(target if code == errno.EEXIST else source))

    return move


def _create_temp(target: Path, create_mode: int) -> tuple[str, int]:
    """A new, empty file beside ``target`` that nobody else could have prepared (its path), and its descriptor."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(16):
        tmp = f"{os.fspath(target)}.tmp.{os.getpid()}.{os.urandom(6).hex()}"  # a string: no ``Path`` parsed per write
        try:
            return tmp, os.open(tmp, flags, create_mode)
        except FileExistsError:  # a leftover, or something planted: never reuse it
            continue
    raise FileExistsError(errno.EEXIST, "no free temp file name after 16 tries", str(target))


def _remove_quietly(path: str | Path) -> None:
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
