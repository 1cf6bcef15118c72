"""The manifest: which Parquet segments make up the sealed log.

Replaced atomically (temp file, fsync, rename, directory fsync): the rename is the commit
point of a seal or a compaction. Files in ``segments/`` that it does not list are not part
of the log. Files a compaction replaced are kept in ``garbage`` for a grace period so that
readers holding an older snapshot can still open them; garbage collection deletes those and
nothing else.

The manifest is decoded strictly and checked before anything trusts it: every key present
and no other, a checksum over its content (format 2), and consistent seq ranges. A damaged
manifest raises :class:`CorruptLogError`, so no seal, compaction or garbage collection runs
on it (one flipped key once made every segment look "unlisted", and garbage collection
deleted them all). Format 1 (written by earlier versions) has no checksum and no segment
hashes; it is read as it is and rewritten as format 2 by the next seal or compaction.

The commit step is kept behind :class:`Committer` so that another table format (an
Iceberg or Delta committer) can replace it without touching the rest of the log.
"""

from __future__ import annotations

import os
from typing import Any, Protocol

import msgspec

from .._errors import CorruptLogError

try:  # the interpreter's built-in SHA-256: _sha2 from Python 3.12, _sha256 before
    from _sha2 import sha256 as _small_sha256  # type: ignore[import-not-found,unused-ignore]
except ImportError:  # pragma: no cover - Python 3.11
    from _sha256 import sha256 as _small_sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
from .._files import atomic_write

FORMAT = 2
LEGACY_FORMAT = 1
#: The content hash of a segment file and the manifest's checksum: SHA-256, hex. (Not
#: BLAKE2b: hashlib's SHA-256 uses the CPU's SHA instructions, 4x faster here.)
HASH_BYTES = 32


class SegmentInfo(msgspec.Struct, frozen=True):
    """One sealed Parquet segment holding seqs ``first..last`` (inclusive, gap-free).

    ``hash`` is the SHA-256 of the file's bytes ('' only in a format-1 manifest).
    """

    file: str
    first_seq: int
    last_seq: int
    rows: int
    min_ts: int
    max_ts: int
    bytes: int
    hash: str = ""


class Garbage(msgspec.Struct, frozen=True):
    """A file a manifest generation retired at ``since_us``: deleted after the grace."""

    file: str
    since_us: int


class Manifest(msgspec.Struct, frozen=True):
    format: int = FORMAT
    version: int = 0
    sealed_seq: int = 0
    segments: list[SegmentInfo] = []
    garbage: list[Garbage] = []
    checksum: str = ""

    @property
    def legacy(self) -> bool:
        """Written by an older version: no checksum, segments without content hashes."""
        return self.format == LEGACY_FORMAT


_encoder = msgspec.json.Encoder()
_SEGMENT_KEYS = {
    LEGACY_FORMAT: frozenset(SegmentInfo.__struct_fields__) - {"hash"},
    FORMAT: frozenset(SegmentInfo.__struct_fields__),
}
_KEYS = {
    LEGACY_FORMAT: frozenset(Manifest.__struct_fields__) - {"checksum"},
    FORMAT: frozenset(Manifest.__struct_fields__),
}
_GARBAGE_KEYS = frozenset(Garbage.__struct_fields__)


def content_hash(data: bytes | memoryview) -> str:
    # Imported here: hashlib starts OpenSSL (about 2 ms), which a cold append must not pay.
    import hashlib

    return hashlib.sha256(data).hexdigest()


def checksum(manifest: Manifest) -> str:
    """The checksum of everything but the checksum: the canonical encoding's hash."""
    body = _encoder.encode(msgspec.structs.replace(manifest, checksum=""))
    # A manifest is small: the interpreter's own SHA-256 (same digest, no OpenSSL start-up).
    return str(_small_sha256(body).hexdigest())


def decode(data: bytes, where: str) -> Manifest:
    """A checked manifest from its JSON, or :class:`CorruptLogError` saying what is wrong."""
    try:
        raw = msgspec.json.decode(data)
    except (msgspec.MsgspecError, UnicodeDecodeError) as exc:
        raise CorruptLogError(f"{where}: unreadable manifest ({exc})") from None
    if not isinstance(raw, dict):
        raise CorruptLogError(f"{where}: expected a manifest object; got {type(raw).__name__}")
    fmt = raw.get("format")
    if fmt not in _KEYS or isinstance(fmt, bool):
        raise CorruptLogError(
            f"{where}: expected manifest format {LEGACY_FORMAT} or {FORMAT}; got {fmt!r}"
        )
    _check_keys(raw, _KEYS[fmt], where, "manifest")
    for i, seg in enumerate(_list(raw["segments"], where, "segments")):
        _check_keys(seg, _SEGMENT_KEYS[fmt], where, f"segments[{i}]")
    for i, g in enumerate(_list(raw["garbage"], where, "garbage")):
        _check_keys(g, _GARBAGE_KEYS, where, f"garbage[{i}]")
    try:
        manifest = msgspec.convert(raw, Manifest, strict=True)
    except msgspec.ValidationError as exc:
        raise CorruptLogError(f"{where}: unreadable manifest ({exc})") from None
    if fmt == FORMAT and manifest.checksum != checksum(manifest):
        raise CorruptLogError(
            f"{where}: manifest checksum mismatch (expected {checksum(manifest)}; got "
            f"{manifest.checksum!r}): the file was changed after it was written"
        )
    check(manifest, where)
    return manifest


def _list(value: Any, where: str, name: str) -> list[Any]:
    if not isinstance(value, list):
        raise CorruptLogError(f"{where}: expected {name} to be a list; got {type(value).__name__}")
    return value


def _check_keys(obj: Any, want: frozenset[str], where: str, name: str) -> None:
    if not isinstance(obj, dict):
        raise CorruptLogError(f"{where}: expected {name} to be an object; got {obj!r}")
    if obj.keys() != want:
        missing = sorted(want - obj.keys())
        extra = sorted(obj.keys() - want)
        raise CorruptLogError(
            f"{where}: expected {name} keys {', '.join(sorted(want))}; "
            f"missing {missing or 'none'}, unknown {extra or 'none'}"
        )


def check(manifest: Manifest, where: str) -> None:
    """The manifest's own invariants: gap-free seq ranges from 1, sealed_seq at the end,
    sizes and hashes well formed, no file both live and retired."""
    expect = 1
    files: set[str] = set()
    for s in manifest.segments:
        problem = ""
        if s.first_seq != expect:
            problem = f"expected first seq {expect}; got {s.first_seq}"
        elif s.last_seq < s.first_seq or s.rows != s.last_seq - s.first_seq + 1:
            problem = f"seqs {s.first_seq}..{s.last_seq} do not match {s.rows} rows"
        elif s.min_ts > s.max_ts or s.bytes <= 0:
            problem = f"bad ts range {s.min_ts}..{s.max_ts} or size {s.bytes}"
        elif not manifest.legacy and not _is_hash(s.hash):
            problem = f"expected a {HASH_BYTES * 2}-digit hex content hash; got {s.hash!r}"
        elif os.path.basename(s.file) != s.file or s.file in files:
            problem = "a bad or repeated file name"
        if problem:
            raise CorruptLogError(f"{where}: segment {s.file!r}: {problem}")
        files.add(s.file)
        expect = s.last_seq + 1
    if manifest.sealed_seq != expect - 1:
        raise CorruptLogError(
            f"{where}: expected sealed_seq {expect - 1} (the last segment's); "
            f"got {manifest.sealed_seq}"
        )
    for g in manifest.garbage:
        if g.file in files or os.path.basename(g.file) != g.file:
            raise CorruptLogError(f"{where}: garbage {g.file!r} is live or a bad file name")


def _is_hash(text: str) -> bool:
    return len(text) == HASH_BYTES * 2 and all(c in "0123456789abcdef" for c in text)


def stat_segment(directory: str, info: SegmentInfo) -> str:
    """The path of a listed segment once its size matches the manifest: a missing,
    truncated or replaced file is :class:`CorruptLogError`, one line naming it. (No
    pyarrow here: the DuckDB readers check segments this way without loading it.)"""
    path = os.path.join(directory, info.file)
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        raise CorruptLogError(f"{path}: sealed segment listed in the manifest is missing") from None
    except OSError as exc:
        raise CorruptLogError(f"{path}: cannot read sealed segment ({exc.strerror})") from None
    if size != info.bytes:
        raise CorruptLogError(
            f"{path}: expected a sealed segment of {info.bytes} bytes (per the manifest); "
            f"got {size} bytes (truncated or replaced)"
        )
    return path


class Committer(Protocol):
    def load(self) -> Manifest: ...

    def commit(self, manifest: Manifest) -> None: ...


class FileCommitter:
    """Manifest as one JSON file replaced by rename."""

    def __init__(self, path: str) -> None:
        self.path = path

    def load(self) -> Manifest:
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return Manifest()
        return decode(data, self.path)

    def commit(self, manifest: Manifest) -> None:
        """Write ``manifest`` as the current format, checksummed (refused if inconsistent)."""
        manifest = msgspec.structs.replace(manifest, format=FORMAT, checksum="")
        check(manifest, self.path)
        manifest = msgspec.structs.replace(manifest, checksum=checksum(manifest))
        atomic_write(self.path, _encoder.encode(manifest))

    def version_stamp(self) -> tuple[int, int]:
        """A cheap change detector (inode, mtime): a rename changes the inode."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return (0, 0)
        return (st.st_ino, st.st_mtime_ns)
