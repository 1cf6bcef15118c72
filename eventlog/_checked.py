"""Cache files that carry their own checksum, so that a damaged one is never trusted.

Everything under ``<store>/cache/`` is derived from the log and may be deleted; a flipped
bit in one must not change an answer, only cost a rebuild. A *checked* file is a header
(:data:`MAGIC`, the CRC-32 of the body, the body's length) and the body; :func:`body_of`
hands back the body only when all three agree, and readers treat anything else as absent.
A reader that finds a damaged file notes it with :func:`note_damage` in ``damage.log`` at
the cache root, so that ``evolog verify`` can say what was found and rebuilt;
:func:`scan` checks every checked file under the cache now.

Writes go to a unique temporary name in the same folder (two processes saving the same
cache at once must not share one) and are renamed into place.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import struct
import time
import zlib
from collections.abc import Iterable
from typing import Final

__all__ = [
    "DAMAGE_LOG", "HEADER_SIZE", "MAGIC", "body_of", "checked_body", "file_crc", "header",
    "note_damage", "read_checked", "scan", "with_header", "write_checked", "write_parts",
]  # fmt: skip

MAGIC: Final = b"EVCK"
_HEAD: Final = struct.Struct("<4sIQ")  # magic, crc32 of the body, body length
HEADER_SIZE: Final = _HEAD.size
DAMAGE_LOG: Final = "damage.log"
#: The damage log is a note for people, not a history: it is cut back past this size.
_LOG_LIMIT: Final = 64 * 1024


def header(crc: int, size: int) -> bytes:
    """The header of a checked file whose body of ``size`` bytes has CRC-32 ``crc``."""
    return _HEAD.pack(MAGIC, crc, size)


def with_header(body: bytes) -> bytes:
    """``body`` with its header."""
    return _HEAD.pack(MAGIC, zlib.crc32(body), len(body)) + body


def body_of(raw: bytes | memoryview | object) -> memoryview | None:
    """The body of a checked file's bytes (any buffer), or None if they are not a whole,
    undamaged checked file."""
    view = memoryview(raw)  # type: ignore[arg-type]
    if len(view) < _HEAD.size:
        return None
    magic, crc, size = _HEAD.unpack_from(view)
    if magic != MAGIC or size != len(view) - _HEAD.size:
        return None
    body = view[_HEAD.size :]
    return body if zlib.crc32(body) == crc else None


def checked_body(raw: object, path: str, what: str) -> memoryview | None:
    """:func:`body_of` ``raw``, the bytes of the checked file at ``path``; a damaged one is
    noted (as ``what``), one of another format (an older version's) silently refused."""
    body = body_of(raw)
    if body is None and _near_magic(bytes(memoryview(raw)[: len(MAGIC)])):  # type: ignore[arg-type]
        note_damage(path, f"{what}: its checksum or length does not match")
    return body


def file_crc(path: str) -> int:
    """The CRC-32 of a whole file (for files another library writes, such as usearch's)."""
    with open(path, "rb") as f:
        if not os.fstat(f.fileno()).st_size:
            return 0
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return zlib.crc32(data)


def write_parts(path: str, parts: Iterable[bytes | memoryview], mode: int = 0o644) -> None:
    """Write ``parts`` to ``path`` atomically through a unique temporary file."""
    import tempfile  # only to write: a cold reader does without it

    directory, name = os.path.split(path)
    fd, tmp = tempfile.mkstemp(dir=directory or ".", prefix=".tmp-", suffix="-" + name)
    try:
        with os.fdopen(fd, "wb") as f:
            for part in parts:
                f.write(part)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_checked(path: str, body: bytes, mode: int = 0o644) -> None:
    """Write ``body`` as a checked file at ``path`` (atomically)."""
    write_parts(path, [with_header(body)], mode)


def read_checked(path: str) -> bytes | None:
    """The body of the checked file at ``path``; None if it is missing or damaged (noted)."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None
    body = checked_body(raw, path, "cache file")
    return None if body is None else bytes(body)


def _cache_root(path: str) -> str | None:
    """The ``cache`` folder ``path`` lies in, if any."""
    folder = os.path.dirname(os.path.abspath(path))
    while os.path.basename(folder) != "cache":
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent
    return folder


def note_damage(path: str, detail: str) -> None:
    """Record that the cache file at ``path`` was found damaged and is not used (it is
    rebuilt from the log); best effort, a cache note never fails a read."""
    root = _cache_root(path)
    if root is None:
        return
    log = os.path.join(root, DAMAGE_LOG)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    line = f"{stamp} {os.path.relpath(path, root)}: {detail}; not used, rebuilt\n"
    with contextlib.suppress(OSError):
        if os.path.getsize(log) > _LOG_LIMIT:
            os.unlink(log)
    with contextlib.suppress(OSError), open(log, "a", encoding="utf-8") as f:
        f.write(line)


def _near_magic(lead: bytes) -> bool:
    """Whether a file starts with :data:`MAGIC` or with it one flipped bit away (a file
    damaged there is still reported rather than taken for some other format)."""
    if len(lead) != len(MAGIC):
        return False
    return sum(bin(a ^ b).count("1") for a, b in zip(lead, MAGIC, strict=True)) <= 1


def scan(cache: str) -> tuple[list[str], list[str]]:
    """(checked files under ``cache`` that are damaged now, lines of the damage log)."""
    damaged: list[str] = []
    for folder, _, names in os.walk(cache):
        for name in sorted(names):
            path = os.path.join(folder, name)
            try:
                with open(path, "rb") as f:
                    if not _near_magic(f.read(len(MAGIC))):
                        continue
                    f.seek(0)
                    raw = f.read()
            except OSError:
                continue
            if body_of(raw) is None:
                damaged.append(os.path.relpath(path, cache))
    try:
        with open(os.path.join(cache, DAMAGE_LOG), encoding="utf-8", errors="replace") as f:
            noted = [line.rstrip("\n") for line in f if line.strip()]
    except OSError:
        noted = []
    return sorted(damaged), noted
