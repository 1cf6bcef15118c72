"""The advice state on disk, under the store's ``cache/advice/`` (deletable: it is rebuilt).

One msgpack file holds the folded state as of a seq: numpy arrays as raw bytes (read back
without copying), keys, genes, open attempts, recently closed ones and the evolver window.
The usearch index of signal keys is a second file, memory-mapped on load. Both are written
to a temporary name and renamed, so a reader sees a whole old or a whole new cache. The
state and the buried entries are checked files (:mod:`evolog.eventlog._checked`) and the
state records the key index's CRC-32: a damaged cache is not used but rebuilt.

A *signature* of the log's files (the manifest's size and mtime, each WAL file's size) is
stored with the state: when it still matches, no event was appended, sealed or compacted
since, and a cold process can answer without opening the log at all.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Any

import msgspec
from evolog.eventlog import Paths, file_crc, read_checked, write_checked

from ._edges import FORMATS, StatTable
from ._forgotten import ForgottenIds
from ._keysearch import KeyCatalog
from ._state import AdviceState, AttemptInfo

FORMAT = 3  # 2: ``forgotten`` (see AdviceState); 3: the keys' matching sets (advice._keysearch)
STATE_FILE = "state.msgpack"
INDEX_FILE = "keys.usearch"

Signature = list[list[Any]]


def cache_dir(paths: Paths) -> str:
    return os.path.join(paths.cache, "advice")


def log_signature(paths: Paths) -> Signature:
    """Sizes and times of the log's files; equal signatures mean no new events."""
    out: Signature = []
    try:
        st = os.stat(paths.manifest)
        out.append(["manifest", st.st_size, st.st_mtime_ns])
    except FileNotFoundError:
        out.append(["manifest", -1, 0])
    try:
        names = sorted(os.listdir(paths.wal))
    except FileNotFoundError:
        names = []
    for name in names:
        with contextlib.suppress(FileNotFoundError):
            out.append([name, os.stat(os.path.join(paths.wal, name)).st_size, 0])
    return out


def _arrays(table: StatTable, n_owners: int) -> dict[str, bytes]:
    columns = table.columns(n_owners)
    return {k: columns[k].astype(FORMATS[k]).tobytes() for k in FORMATS}


def _table(raw: dict[str, bytes]) -> StatTable:
    if set(raw) != set(FORMATS):
        raise ValueError("cached statistics have unexpected columns")
    return StatTable(dict(raw))


def save_state(paths: Paths, state: AdviceState, signature: Signature) -> None:
    """Write the state (and the key index, if one was built) atomically; errors are ignored,
    since a cache that cannot be written only costs the next process a rebuild."""
    directory = cache_dir(paths)
    catalog = state.catalog
    blob = {
        "format": FORMAT,
        "head": state.head,
        "signature": signature,
        "half_lives": [state.edge_half_life_us, state.gene_half_life_us],
        "keys": catalog.keys,
        "match": sorted(catalog.match.items()),
        "genes": state.genes,
        "edges": _arrays(state.edges, len(catalog.keys)),
        "gene_stats": _arrays(state.gene_stats, 1),
        "forgotten": state.forgotten.to_bytes(),
        "open": [
            [getattr(a, f) for f in AttemptInfo.__struct_fields__] for a in state.open.values()
        ],
        # Nested, so that a load can leave them undecoded until they are needed.
        "aux": msgspec.msgpack.encode(
            [[[aid, *c] for aid, c in state.closed.items()], [list(w) for w in state.window]]
        ),
        "indexed": catalog.indexed,
        "index_size": catalog.index_size,
        "index_crc": catalog.index_crc,
    }
    with contextlib.suppress(OSError):
        os.makedirs(directory, exist_ok=True)
        if catalog.index_loaded and catalog.indexed:
            fd, tmp_index = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix="-keys")
            os.close(fd)
            try:
                catalog.save_index(tmp_index)
                blob["index_crc"] = file_crc(tmp_index)
                os.replace(tmp_index, os.path.join(directory, INDEX_FILE))
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(tmp_index)
        write_checked(os.path.join(directory, STATE_FILE), msgspec.msgpack.encode(blob))


def load_state(paths: Paths) -> tuple[AdviceState, Signature] | None:
    """The cached state and its log signature, or None if absent or unusable."""
    directory = cache_dir(paths)
    try:
        raw = read_checked(os.path.join(directory, STATE_FILE))
        if raw is None:
            return None
        blob = msgspec.msgpack.decode(raw)
        fresh = AdviceState()
        if blob.get("format") != FORMAT or blob.get("half_lives") != [
            fresh.edge_half_life_us,
            fresh.gene_half_life_us,
        ]:
            return None  # another version's cache: decay sums are relative to its half-lives
        return _state_from(blob, directory), blob["signature"]
    except (OSError, msgspec.DecodeError, KeyError, TypeError, ValueError):
        return None  # a damaged or foreign cache is rebuilt from the log


def _aux(data: bytes) -> tuple[list[Any], list[Any]]:
    closed, window = msgspec.msgpack.decode(data)
    return closed, window


def _state_from(blob: dict[str, Any], directory: str) -> AdviceState:
    state = AdviceState()
    state.head = int(blob["head"])
    state.edge_half_life_us, state.gene_half_life_us = blob["half_lives"]
    state.catalog = KeyCatalog(list(blob["keys"]), ((int(k), str(m)) for k, m in blob["match"]))
    state.genes = list(blob["genes"])
    state.gene_ids = {g: i for i, g in enumerate(state.genes)}
    state.edges = _table(blob["edges"])
    state.gene_stats = _table(blob["gene_stats"])
    state.open = {a[0]: AttemptInfo(*a) for a in blob["open"]}
    state.forgotten = ForgottenIds(blob["forgotten"])
    aux = blob["aux"]
    if not isinstance(aux, bytes):
        raise TypeError("cached state: expected the closed attempts and window as bytes")
    state.defer(lambda: _aux(aux))
    indexed = int(blob["indexed"])
    if indexed:
        path = os.path.join(directory, INDEX_FILE)
        state.catalog.defer_index(path, indexed, int(blob["index_size"]), int(blob["index_crc"]))
    return state


_DEAD_FILE = "dead.json"


def load_dead(paths: Paths) -> tuple[Signature, dict[str, str]] | None:
    """The buried entries saved with the log signature they were computed at, if readable."""
    try:
        raw = read_checked(os.path.join(cache_dir(paths), _DEAD_FILE))
        if raw is None:
            return None
        data = msgspec.json.decode(raw)
        return data["signature"], dict(data["dead"])
    except (OSError, ValueError, KeyError, TypeError, msgspec.MsgspecError):
        return None  # a cache: anything unreadable is recomputed


def save_dead(paths: Paths, signature: Signature, dead: dict[str, str]) -> None:
    """Keep the buried entries so that a cold advice call on an unchanged log reads no log."""
    with contextlib.suppress(OSError):
        os.makedirs(cache_dir(paths), exist_ok=True)
        target = os.path.join(cache_dir(paths), _DEAD_FILE)
        write_checked(target, msgspec.json.encode({"signature": signature, "dead": dead}))
