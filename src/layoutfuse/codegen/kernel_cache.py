"""The kernel cache on disk: one file per generated module, never trusted.

An entry is ``kernel_<key>.py`` in ``$LAYOUTFUSE_CACHE_DIR`` (default
``~/.cache/layoutfuse/kernels``): a header comment with :data:`CACHE_FORMAT`, the digest of
the key it was generated for (:func:`cache_key`: the format and the source) and the digest of
its content, then the source. :func:`stored_entry` hands back the bytes to execute, which are
always the expected entry, never bytes read from the file: an entry that differs (empty,
truncated, garbled, another kernel's) is rewritten, with a
:class:`~layoutfuse.errors.KernelCacheWarning` naming the file.

- Writes are atomic: a temporary file in the same directory (mode 0o600), then ``os.replace``;
  a reader in another process sees the old entry or the new one, never half of one.
- The directory is created 0o700. A directory or entry that group or others may write, or that
  another user owns, is refused with :class:`~layoutfuse.errors.KernelCacheError`: whoever can
  write it could choose the code layoutfuse runs.
- A directory that cannot be written (read-only, a path that is a file, a failed write) is
  replaced, for the rest of the process, by a private temporary directory, with one warning
  naming ``LAYOUTFUSE_CACHE_DIR``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import tempfile
import threading
import warnings
from pathlib import Path

from ..errors import KernelCacheError, KernelCacheWarning

CACHE_FORMAT = "layoutfuse-kernel-1"
"""The generator version of cache entries, part of every entry's key: bump it when the entry
format, or anything a stored entry's meaning depends on besides its source, changes."""

_HEADER = re.compile(
    rb"# layoutfuse kernel cache entry: format=(\S+) key=([0-9a-f]{64}) "
    rb"content=([0-9a-f]{64})"
)
_DEFAULT_CACHE = Path("~/.cache/layoutfuse/kernels")
_CACHE_DIRS: dict[str | None, Path] = {}  # LAYOUTFUSE_CACHE_DIR's value -> directory in use
_CACHE_LOCK = threading.Lock()


def _private_problem(info: os.stat_result) -> str | None:
    """Why a file or directory with this status may hold code others wrote, or None."""
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"is writable by group or others (mode {stat.S_IMODE(info.st_mode):#o})"
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return f"is owned by another user (uid {info.st_uid})"
    return None


def _refuse(path: Path, problem: str) -> KernelCacheError:
    return KernelCacheError(
        f"kernel cache: {path} {problem}; layoutfuse does not run code from it. Make it "
        f"private (chmod go-w, or remove it), or point LAYOUTFUSE_CACHE_DIR at a directory "
        f"only you can write"
    )


def _fall_back(configured: str | None, directory: Path, why: str) -> Path:
    """A private temporary directory in place of ``directory``, with one warning."""
    private = Path(tempfile.mkdtemp(prefix="layoutfuse-kernels-"))  # mode 0o700
    warnings.warn(
        f"kernel cache: {directory} cannot be written ({why}); this process keeps its "
        f"kernels in {private}. Set LAYOUTFUSE_CACHE_DIR to a writable directory",
        KernelCacheWarning,
        stacklevel=3,
    )
    _CACHE_DIRS[configured] = private
    return private


def _open_cache_dir(configured: str | None) -> Path:
    """The directory named by ``configured`` (or the default), created private, checked."""
    directory = Path(configured).expanduser() if configured else _DEFAULT_CACHE.expanduser()
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as error:  # a file there, a read-only parent, ...
        return _fall_back(configured, directory, f"{type(error).__name__}: {error}")
    problem = _private_problem(directory.stat())
    if problem is not None:
        raise _refuse(directory, problem)
    if not os.access(directory, os.W_OK | os.X_OK):
        return _fall_back(configured, directory, "no write permission")
    _CACHE_DIRS[configured] = directory
    return directory


def kernel_cache_dir() -> Path:
    """Where generated kernel modules are written: ``$LAYOUTFUSE_CACHE_DIR`` or ~/.cache
    (a private temporary directory when that cannot be written). Checked once per value."""
    configured = os.environ.get("LAYOUTFUSE_CACHE_DIR") or None
    with _CACHE_LOCK:
        if configured in _CACHE_DIRS:
            return _CACHE_DIRS[configured]
        return _open_cache_dir(configured)


def cache_key(source: str) -> str:
    """The digest an entry for ``source`` is stored and checked under."""
    return hashlib.sha256(f"{CACHE_FORMAT}\n{source}".encode()).hexdigest()


def cache_entry(source: str) -> bytes:
    """What the cache file of ``source`` holds: a header comment, then the source."""
    content = hashlib.sha256(source.encode()).hexdigest()
    header = (
        f"# layoutfuse kernel cache entry: format={CACHE_FORMAT} key={cache_key(source)} "
        f"content={content}\n"
    )
    return (header + source).encode()


_MISSING = "is missing"


def _entry_problem(path: Path, entry: bytes, key: str) -> str | None:
    """None when ``path`` holds exactly ``entry``, :data:`_MISSING` when there is no file,
    else what is wrong with it; refused when others could have written it."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return _MISSING
    except OSError as error:  # a symbolic link (ELOOP), ...
        return f"cannot be opened as a plain file ({error.strerror})"
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return "is not a regular file"
        problem = _private_problem(info)
        if problem is not None:
            raise _refuse(path, problem)
        data = handle.read()
    return None if data == entry else _diagnosis(data, key)


def _diagnosis(data: bytes, key: str) -> str:
    """What is wrong with bytes that are not the expected entry (for the warning)."""
    if not data:
        return "is empty"
    head, _, body = data.partition(b"\n")
    match = _HEADER.fullmatch(head)
    if match is None:
        return "has no valid header (garbled, or not a layoutfuse entry)"
    if match[1].decode() != CACHE_FORMAT or match[2].decode() != key:
        return "was written for another kernel"
    if hashlib.sha256(body).hexdigest() != match[3].decode():
        return "does not match its content digest (truncated or modified)"
    return "holds another kernel under this kernel's digest"


def _write_entry(path: Path, entry: bytes) -> None:
    """Atomically: a temporary file in the same directory, then ``os.replace``."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(entry)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def stored_entry(source: str) -> tuple[Path, bytes]:
    """The path of ``source``'s entry, checked (and written where missing or wrong), and the
    entry's bytes: what is executed, whatever the file holds by then."""
    entry, key = cache_entry(source), cache_key(source)
    path = kernel_cache_dir() / f"kernel_{key[:24]}.py"
    problem = _entry_problem(path, entry, key)
    if problem is None:
        return path, entry
    if problem != _MISSING:
        warnings.warn(
            f"kernel cache: {path} {problem}; regenerated it", KernelCacheWarning, stacklevel=4
        )
    try:
        _write_entry(path, entry)
    except OSError as error:  # read-only file system, disk full, directory gone
        path = _writable_dir(path.parent, error) / path.name
        _write_entry(path, entry)
    return path, entry


def _writable_dir(directory: Path, error: OSError) -> Path:
    """After a failed write into ``directory``: the directory made again if it was removed,
    else a private temporary one (one warning)."""
    configured = os.environ.get("LAYOUTFUSE_CACHE_DIR") or None
    with _CACHE_LOCK:
        if not directory.exists() and _CACHE_DIRS.get(configured) == directory:
            return _open_cache_dir(configured)
        return _fall_back(configured, directory, f"{type(error).__name__}: {error}")


def read_record(name: str) -> bytes | None:
    """The bytes of the data record ``name`` in the cache directory (measured choices,
    ``runtime/measure.py``), or None when there is none or it cannot be read as a plain,
    private file. A record is data, never code: its reader checks what it holds."""
    path = kernel_cache_dir() / name
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or _private_problem(info) is not None:
            return None
        return handle.read()


def write_record(name: str, data: bytes) -> None:
    """Write the data record ``name`` atomically (a reader sees the old or the new bytes);
    a directory that cannot be written falls back as kernels do."""
    path = kernel_cache_dir() / name
    try:
        _write_entry(path, data)
    except OSError as error:
        _write_entry(_writable_dir(path.parent, error) / name, data)
