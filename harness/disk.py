"""Full, over-quota and read-only disks: recognised once, reported in one line naming the path.

A run can fill a disk at any write (the response store, the run folder, a build, a rescore); each
caller turns the failure into one line that says which path, why, and how much space was needed when
that is known, and keeps what was already written.
"""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
from pathlib import Path

from harness.secrets import redact_text

#: The errors a full disk, a spent quota or a read-only mount raise.
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})
# SQLite's primary result codes for a full disk, a read-only file and a failed read or write.
_SQLITE_DISK_CODES = frozenset({sqlite3.SQLITE_FULL, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_IOERR})


def is_disk_error(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk is full, over quota or read-only (an OSError, or SQLite's own code)."""
    if isinstance(exc, OSError):
        return exc.errno in DISK_ERRNOS
    if isinstance(exc, sqlite3.DatabaseError):
        code = getattr(exc, "sqlite_errorcode", None)
        return code is not None and code & 0xFF in _SQLITE_DISK_CODES
    return False


def free_bytes(path: Path) -> int | None:
    """Free space on the file system holding ``path`` (its nearest existing folder), or None if unknown."""
    for folder in (path, *path.parents):
        if folder.exists():
            try:
                return shutil.disk_usage(folder).free
            except OSError:
                return None
    return None


def size_text(n: int) -> str:
    """A byte count for people: 512 B, 3.4 KB, 12.0 MB."""
    for unit, scale in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def disk_problem(path: Path, exc: BaseException, needed: int | None = None) -> str:
    """``PATH: No space left on device (about 1.2 MB needed, 0 B free)``: the path, the cause, the space."""
    cause = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    free = free_bytes(path)
    space = [f"about {size_text(needed)} needed"] if needed else []
    if free is not None:
        space.append(f"{size_text(free)} free")
    return f"{path}: {cause}" + (f" ({', '.join(space)})" if space else "")


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one step (written to ``path.tmp``, then renamed): a reader sees the
    old file or the new one, and a failed write (a full disk) leaves no ``.tmp`` behind. Every run file,
    samples file and audit report is written here, so here each is cleared of known secret values (an
    answer or an error message may quote one: ``harness.secrets``)."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(redact_text(text), encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def failed_path(exc: OSError, default: Path) -> Path:
    """The file an OSError names, else ``default``."""
    return Path(os.fsdecode(exc.filename)) if exc.filename is not None else default
