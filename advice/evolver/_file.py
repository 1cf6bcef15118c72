"""Importing an evolver memory-graph JSONL file into our log, once or by following it.

Each non-blank line becomes one event whose id is evolver's ``id``, so importing a file again
adds nothing. evolver ids are not unique (two snapshots in one millisecond share one, and
hand-made graphs repeat them), so the second and later lines with an id already used *earlier
in the same file* get ``<id>@<byte offset>``; a line without a usable id gets an id derived
from its bytes. Both depend only on the file, never on the store, so a re-import derives the
same ids. The patch of such an event restores the original id on export.

Lines are read the way evolver reads them: split on ``\\n``, trimmed, blank ones skipped.
Lines that are not JSON, or parse to a falsy value, are skipped and counted (evolver drops
them too); JSON values that are not an evolver event (an object with ``type``
``"MemoryGraphEvent"``, which is all evolver itself counts) or not of a kind we know are
skipped and counted. A file is recognised before anything is appended: if its first lines
(the first complete lines read) hold no evolver event at all, it is not an evolver graph
(an ``evolog replay`` dump, another program's JSONL, a binary file) and the import is
refused with :class:`~advice.InvalidInputError`, leaving the store as it was. An event
without a timestamp evolver can read is imported at the previous line's time and reported
(``undated``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from typing import Any

import msgspec
from evolog.eventlog import Event, EventLog, InvalidEventError
from evolog.eventlog.schema import js_trim, js_truthy

from .._errors import EvolverSourceError, InvalidInputError
from ._import import (
    EVENT_TYPE,
    event_ts,
    evolver_to_event,
    is_evolver_event,
    readable_ts,
    supported_kind,
)

BATCH = 1000
READ_CHUNK = 1 << 20
#: Longest line read (bytes). An evolver line is one event (the log keeps at most 1 MiB of
#: one); a longer run without a newline is a binary file or an endless stream
#: (``/dev/zero``), and waiting for its end would hold it all in memory.
MAX_LINE_BYTES = 16 << 20
#: Blank lines read before the first evolver event is seen, at most (bytes): an endless
#: stream of blank lines would otherwise be read to no end without a line to recognise.
MAX_BLANK_PREFIX = 1 << 20
_MAX_BASE_ID = 200  # room for "@<offset>" within the log's 256-character ids
MAX_PROBLEMS = 20


class ImportReport(msgspec.Struct):
    """What an import (or one follow poll) did; counts are of non-blank lines."""

    path: str
    lines: int = 0
    imported: int = 0
    duplicates: int = 0
    unparseable: int = 0
    unsupported: int = 0
    rejected: int = 0
    lossy: int = 0
    undated: int = 0
    offset: int = 0
    problems: list[str] = []

    def note(self, line_no: int, message: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(f"{self.path}:{line_no}: {message}")

    def explain_lossy(self) -> None:
        """Say once why lines were counted as lossy (the schema lacks the patch field)."""
        if self.lossy and len(self.problems) < MAX_PROBLEMS:
            self.problems.append(
                f"{self.path}: {self.lossy} lines differ from evolver's writer format (missing "
                "or extra fields, other value types); advice on them is exact, but exporting "
                "them exactly needs the event schema's evolver_patch field"
            )

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "lines": self.lines,
            "imported": self.imported,
            "duplicates": self.duplicates,
            "unparseable": self.unparseable,
            "unsupported": self.unsupported,
            "rejected": self.rejected,
            "lossy": self.lossy,
            "undated": self.undated,
            "offset": self.offset,
            "problems": list(self.problems),
        }


class _IdDeriver:
    """Derives file-unique event ids from evolver ids (see the module docstring)."""

    def __init__(self, id_prefix: str = "") -> None:
        self.prefix = id_prefix
        self._seen: set[bytes] = set()

    def base(self, obj: Any, raw: bytes) -> str:
        given = obj.get("id") if isinstance(obj, dict) else None
        if isinstance(given, str) and given and len(self.prefix) + len(given) <= _MAX_BASE_ID:
            return self.prefix + given
        return f"{self.prefix}evolver-line:{hashlib.blake2b(raw, digest_size=12).hexdigest()}"

    def derive(self, obj: Any, raw: bytes, offset: int) -> str:
        base = self.base(obj, raw)
        digest = hashlib.blake2b(base.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        if digest in self._seen:
            return f"{base}@{offset}"
        self._seen.add(digest)
        return base


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # JSON.parse has no NaN/Infinity literals


def parse_line(raw: bytes) -> tuple[str, Any]:
    """``("blank" | "unparseable" | "value", parsed)`` for one raw line, as evolver reads it."""
    text = js_trim(raw.decode("utf-8", errors="replace"))  # Node's utf8 decoding never throws
    if not text:
        return "blank", None
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except ValueError:
        return "unparseable", None
    return ("value", value) if js_truthy(value) else ("unparseable", None)


def iter_lines(data: bytes, start: int, final: bool) -> Iterator[tuple[int, bytes]]:
    """``(offset, line)`` of the complete lines in ``data`` (which begins at file ``start``).

    With ``final`` the last piece counts even without a newline (a one-shot import reads the
    file as evolver does); without it that piece is left for later (a torn line being written).
    """
    pos = 0
    while True:
        nl = data.find(b"\n", pos)
        if nl < 0:
            if final and pos < len(data):
                yield start + pos, data[pos:]
            return
        yield start + pos, data[pos:nl]
        pos = nl + 1


class EvolverImporter:
    """Stateful importer of one file: remembers ids seen so repeated ids stay unique."""

    def __init__(self, log: EventLog, path: str, agent: str = "evolver", id_prefix: str = ""):
        self.log = log
        self.path = path
        self.agent = agent
        self.ids = _IdDeriver(id_prefix)
        self.line_no = 0
        self._last_ts = 0
        self._recognised = False

    def remember(self, data: bytes, start: int) -> None:
        """Note the ids of lines already imported (resuming a follow at an offset)."""
        for offset, raw in iter_lines(data, start, final=False):
            kind, value = parse_line(raw)
            if kind == "blank":
                continue
            self.line_no += 1
            self._recognised = self._recognised or is_evolver_event(value)
            if kind == "value" and is_evolver_event(value) and supported_kind(value) is not None:
                self.ids.derive(value, raw, offset)
                self._last_ts = event_ts(value, self._last_ts or 1)

    def feed(self, data: bytes, start: int, final: bool, report: ImportReport) -> int:
        """Import the complete lines of ``data``; return the file offset consumed up to."""
        if not self._recognised:
            self._recognise(data, start, final)
        batch: list[tuple[int, Event]] = []
        consumed = start
        for offset, raw in iter_lines(data, start, final):
            consumed = offset + len(raw) + (1 if offset + len(raw) < start + len(data) else 0)
            event = self._map(offset, raw, report)
            if event is not None:
                batch.append((self.line_no, event))
            if len(batch) >= BATCH:
                self._append(batch, report)
                batch = []
        if batch:
            self._append(batch, report)
        report.offset = consumed
        self._check_pending(start + len(data) - consumed, consumed, final)
        return consumed

    def _check_pending(self, pending: int, offset: int, final: bool) -> None:
        """Refuse a line that grows past :data:`MAX_LINE_BYTES`, and blank input that goes
        on past :data:`MAX_BLANK_PREFIX` (see there)."""
        if not final and pending > MAX_LINE_BYTES:
            raise InvalidInputError(
                f"{self.path}: line {self.line_no + 1} (at byte {offset}): expected a JSONL "
                f"line of at most {MAX_LINE_BYTES} bytes; got {pending} bytes without a "
                "newline (a binary file or an endless stream?); stopped there"
            )
        if not self._recognised and offset > MAX_BLANK_PREFIX:
            raise InvalidInputError(
                f"{self.path}: expected an evolver memory graph (JSONL objects with type "
                f'"{EVENT_TYPE}"); got only blank lines in the first {offset} bytes; '
                "nothing imported"
            )

    def _recognise(self, data: bytes, start: int, final: bool) -> None:
        """Refuse a file whose first complete lines hold no evolver event (nothing appended)."""
        first: tuple[int, str] | None = None
        line_no = self.line_no
        for _, raw in iter_lines(data, start, final):
            kind, value = parse_line(raw)
            if kind == "blank":
                continue
            line_no += 1
            if kind == "value" and is_evolver_event(value):
                self._recognised = True
                return
            if first is None:
                first = (line_no, _describe(kind, value))
        if first is not None:
            raise InvalidInputError(
                f"{self.path}: expected an evolver memory graph (JSONL objects with type "
                f'"{EVENT_TYPE}"); got none in the first {line_no - self.line_no} line(s) '
                f"(line {first[0]}: {first[1]}); nothing imported"
            )

    def _map(self, offset: int, raw: bytes, report: ImportReport) -> Event | None:
        kind, value = parse_line(raw)
        if kind == "blank":
            return None
        self.line_no += 1
        report.lines += 1
        if kind == "unparseable":
            report.unparseable += 1
            report.note(self.line_no, "not a JSON value evolver would keep; skipped")
            return None
        if not is_evolver_event(value) or supported_kind(value) is None:
            report.unsupported += 1
            report.note(
                self.line_no,
                f'expected an evolver event (type "{EVENT_TYPE}", a known kind); '
                f"got {_describe(kind, value)}; skipped",
            )
            return None
        event_id = self.ids.derive(value, raw, offset)
        if readable_ts(value) is None:
            report.undated += 1
            report.note(
                self.line_no,
                "no timestamp evolver can read (ts, created_at, at); imported at "
                + ("the previous line's time" if self._last_ts else "the epoch (no earlier line)"),
            )
        mapped = evolver_to_event(value, event_id, self._last_ts or 1, self.agent)
        self._last_ts = mapped.event.ts
        if mapped.lossy:
            report.lossy += 1
        return mapped.event

    def _append(self, batch: list[tuple[int, Event]], report: ImportReport) -> None:
        try:
            receipts = self.log.append_receipts([e for _, e in batch])
        except InvalidEventError:
            # One bad value refuses the whole atomic batch: append line by line to keep the rest.
            for line_no, event in batch:
                try:
                    receipts = self.log.append_receipts([event])
                except InvalidEventError as exc:
                    report.rejected += 1
                    report.note(line_no, f"refused by the log: {exc}")
                    continue
                self._count(receipts[0].duplicate, report)
            return
        for r in receipts:
            self._count(r.duplicate, report)

    @staticmethod
    def _count(duplicate: bool, report: ImportReport) -> None:
        if duplicate:
            report.duplicates += 1
        else:
            report.imported += 1


def _describe(kind: str, value: Any) -> str:
    if kind != "value":
        return "text that is not JSON"
    if not isinstance(value, dict):
        return f"a JSON {type(value).__name__}"
    shown = {k: value.get(k) for k in ("type", "kind") if k in value}
    return f"an object with {shown}" if shown else "an object without type or kind"


def read_range(path: str, start: int, stop: int | None = None) -> bytes:
    """Bytes ``start..stop`` of a file (to its end without ``stop``), errors mapped."""
    try:
        with open(path, "rb") as f:
            f.seek(start)
            return f.read() if stop is None else f.read(max(0, stop - start))
    except OSError as exc:
        raise EvolverSourceError(f"{path}: cannot read the evolver graph: {exc.strerror}") from None


def import_evolver(
    log: EventLog, path: str | os.PathLike[str], *, agent: str = "evolver", id_prefix: str = ""
) -> ImportReport:
    """Import a whole evolver memory-graph file; importing it again adds nothing."""
    path = os.fspath(path)
    report = ImportReport(path)
    importer = EvolverImporter(log, path, agent, id_prefix)
    start = 0
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below; errors are mapped
    except OSError as exc:
        raise EvolverSourceError(f"{path}: cannot open the evolver graph: {exc.strerror}") from None
    with f:
        carry = b""
        while True:
            try:
                chunk = f.read(READ_CHUNK)
            except OSError as exc:
                raise EvolverSourceError(f"{path}: cannot read: {exc.strerror}") from None
            data = carry + chunk
            consumed = importer.feed(data, start, final=not chunk, report=report)
            carry, start = data[consumed - start :], consumed
            if not chunk:
                report.explain_lossy()
                return report
