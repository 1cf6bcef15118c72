"""The item checkpoint's tables: lookups in C equal the Python binary search, for keys that
are there and keys that are not, and damaged key offsets are a damaged checkpoint."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

import pytest
from evolog.projections.memory import _lazy
from hypothesis import given, settings
from hypothesis import strategies as st


def _table(keys: set[str]) -> tuple[_lazy.Table, Path]:
    buf = io.BytesIO()
    _lazy.write_file(buf, {"format": 0}, {"t": {k: i for i, k in enumerate(sorted(keys))}})
    path = Path(tempfile.mkdtemp()) / "t.bin"
    path.write_bytes(buf.getvalue())
    opened = _lazy.open_file(str(path))
    assert opened is not None
    return opened[1]["t"], path


def _python_find(table: _lazy.Table, key: bytes) -> int:
    saved, _lazy._find_key = _lazy._find_key, None
    try:
        return table.find(key)
    finally:
        _lazy._find_key = saved


def test_the_c_search_is_built() -> None:
    assert _lazy._find_key is not None


@settings(max_examples=60, deadline=None)
@given(st.sets(st.text(max_size=6), max_size=40), st.lists(st.text(max_size=6), max_size=20))
def test_c_and_python_lookups_agree(keys: set[str], probes: list[str]) -> None:
    table, _ = _table(keys)
    for k in [*keys, *probes, ""]:
        raw = k.encode("utf-8", "surrogatepass")
        assert table.find(raw) == _python_find(table, raw)
        assert (table.find(raw) >= 0) == (k in keys)


def test_damaged_key_offsets_are_a_damaged_checkpoint() -> None:
    table, _ = _table({f"k{i}" for i in range(50)})
    table._checked = True  # past the CRC: the search itself must not read past the keys
    koff = bytearray(table._koff.tobytes())
    koff[8 * 25 : 8 * 26] = (10**9).to_bytes(8, "little")
    table._koff = memoryview(bytes(koff)).cast("Q")
    with pytest.raises(_lazy.CheckpointDamaged):
        for i in range(50):
            table.find(f"k{i}".encode())
