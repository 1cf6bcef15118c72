"""The kernels' check of stored views (``check_views``) agrees with zlib's CRC-32.

The views are written with ``zlib.crc32`` and checked in C by zlib's own ``crc32_z``; this
pins the two to the same answer on views of every small length (the 8-byte steps and their
tails), empty ones, a flipped bit anywhere and rows left out by the live flags.
"""

from __future__ import annotations

import os
import random
import struct
import zlib

from evolog.projections.graph import _kernels as kernels


def _first_bad(rows: list[bytes], crcs: list[int], live: bytes | None) -> int:
    for r, (row, crc) in enumerate(zip(rows, crcs, strict=True)):
        if (live is None or live[r]) and zlib.crc32(row) != crc:
            return r
    return -1


def test_check_views_finds_the_row_zlib_finds() -> None:
    rnd = random.Random(20261202)
    for _ in range(400):
        rows = [os.urandom(rnd.choice([0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 4099]))
                for _ in range(rnd.randint(1, 30))]  # fmt: skip
        offsets = [0]
        for row in rows:
            offsets.append(offsets[-1] + len(row))
        crcs = [zlib.crc32(row) for row in rows]
        if rnd.random() < 0.7:
            crcs[rnd.randrange(len(rows))] ^= 1 << rnd.randrange(32)
        live = bytes(rnd.choice([0, 1]) for _ in rows) if rnd.random() < 0.5 else None
        got = kernels.check_views(
            b"".join(rows),
            struct.pack(f"<{len(offsets)}q", *offsets),
            struct.pack(f"<{len(crcs)}I", *crcs),
            live,
        )
        assert got == _first_bad(rows, crcs, live)


def test_a_view_past_the_first_megabyte_is_checked_whole() -> None:
    row = os.urandom(3 << 20)
    offsets = struct.pack("<2q", 0, len(row))
    assert kernels.check_views(row, offsets, struct.pack("<I", zlib.crc32(row)), None) == -1
    damaged = row[:-1] + bytes([row[-1] ^ 0x80])
    assert kernels.check_views(damaged, offsets, struct.pack("<I", zlib.crc32(row)), None) == 0
