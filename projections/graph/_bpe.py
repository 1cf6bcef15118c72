"""The WordLlama tokenizer (a SentencePiece-style BPE) in Python, for short texts.

Loading the file into the ``tokenizers`` library costs about three times what reading its
vocabulary and merges does, and a cold ``evolog route`` tokenizes one short task. The model
is simple: the text gets ``▁`` prepended and its spaces become ``▁`` (the normalizer; no
pre-tokenizer, so the whole text is one word), each character is a symbol (one symbol per
UTF-8 byte, ``<0xNN>``, for characters not in the vocabulary), and the adjacent pair with the
lowest merge rank is merged, leftmost first, until none is left. :meth:`Bpe.encode` gives the
``tokenizers`` library's ids (tests/projections/graph/test_embed.py checks it on arbitrary text); a
text it
does not model (one holding a special token such as ``<s>``) returns None, and the caller
uses the library.

Decoding the JSON file and building its two 32000-entry dicts is most of a cold route's
tokenizer cost, and a route looks up a few hundred pairs. :meth:`Bpe.cached` therefore keeps
both maps in one binary file under the store's cache (:class:`Table`: an open-addressed hash
table read through ``mmap``), written on first use and checked against the JSON file's size
and modification time; nothing is decoded up front.
"""

from __future__ import annotations

import contextlib
import heapq
import mmap
import os
import struct
import zlib
from collections.abc import Mapping
from typing import Final

import msgspec
from evolog.eventlog import note_damage, temp_beside

__all__ = ["Bpe", "Table"]


class _Model(msgspec.Struct):
    type: str
    vocab: dict[str, int]
    merges: list[str]
    unk_token: str | None = None
    byte_fallback: bool = False
    fuse_unk: bool = False
    dropout: float | None = None
    continuing_subword_prefix: str | None = None
    end_of_word_suffix: str | None = None
    ignore_merges: bool = False


class _Added(msgspec.Struct):
    content: str


class _File(msgspec.Struct):
    model: _Model
    added_tokens: list[_Added]
    normalizer: msgspec.Raw
    pre_tokenizer: msgspec.Raw


_NORMALIZER: Final = {
    "type": "Sequence",
    "normalizers": [
        {"type": "Prepend", "prepend": "▁"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
    ],
}


_MAGIC: Final = b"EVBPE01\0"
_HEADER: Final = struct.Struct("<8sQqQQQQ")  # magic, source size, mtime_ns, body crc, 3 sizes


class Table:
    """A read-only ``str -> int`` map in a buffer: ``slots`` pairs of (key offset + 1, value),
    probed linearly from ``crc32(key) & (slots - 1)``; a key is a 2-byte length and UTF-8.
    """

    __slots__ = ("_data", "_mask", "_slots", "_start")

    def __init__(self, data: memoryview, start: int, slots: int) -> None:
        self._data, self._start, self._slots, self._mask = data, start, slots, slots - 1

    @staticmethod
    def encode(items: Mapping[str, int]) -> bytes:
        slots = 1 << max(3, (2 * len(items)).bit_length())  # at most half full
        table = [(0, 0)] * slots
        blob = bytearray()
        for key, value in items.items():
            raw = key.encode("utf-8", "surrogatepass")
            i = zlib.crc32(raw) & (slots - 1)
            while table[i][0]:
                i = (i + 1) & (slots - 1)
            table[i] = (len(blob) + 1, value)
            blob += struct.pack("<H", len(raw)) + raw
        packed = struct.pack(f"<Q{2 * slots}I", slots, *(x for pair in table for x in pair))
        return packed + bytes(blob)

    def get(self, key: str, default: int | None = None) -> int | None:
        raw = key.encode("utf-8", "surrogatepass")
        data, start, mask = self._data, self._start, self._mask
        blob = start + 8 + 8 * self._slots
        i = zlib.crc32(raw) & mask
        for _ in range(self._slots):
            offset, value = struct.unpack_from("<II", data, start + 8 + 8 * i)
            if not offset:
                return default
            at = blob + offset - 1
            (size,) = struct.unpack_from("<H", data, at)
            if size == len(raw) and data[at + 2 : at + 2 + size] == raw:
                return value  # type: ignore[no-any-return]
            i = (i + 1) & mask
        return default

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) is not None


class Bpe:
    """Vocabulary and merge ranks of one tokenizer file; see the module docstring."""

    def __init__(
        self,
        vocab: dict[str, int] | Table,
        ranks: dict[str, int] | Table,
        specials: list[str],
    ) -> None:
        self.vocab = vocab
        self.ranks = ranks
        self.specials = specials

    @classmethod
    def cached(cls, path: str, cache: str) -> Bpe | None:
        """The tokenizer of ``path`` from its binary form in ``cache`` (written on first use;
        one that does not match the file is written again)."""
        st = os.stat(path)
        name = f"bpe-{zlib.crc32(os.path.abspath(path).encode()):08x}.bin"
        target = os.path.join(cache, name)
        found = _open_cached(target, st)
        if found is not None:
            return found
        bpe = cls.load(path)
        if bpe is None or isinstance(bpe.vocab, Table) or isinstance(bpe.ranks, Table):
            return bpe
        vocab, ranks = Table.encode(bpe.vocab), Table.encode(bpe.ranks)
        specials = msgspec.msgpack.encode(bpe.specials)
        body = vocab + ranks + specials
        header = _HEADER.pack(_MAGIC, st.st_size, st.st_mtime_ns, zlib.crc32(body), len(vocab),
                              len(ranks), len(specials))  # fmt: skip
        # A cache: if it cannot be written, the next cold process decodes the JSON again.
        with contextlib.suppress(OSError):
            os.makedirs(cache, exist_ok=True)
            tmp = temp_beside(target)
            with open(tmp, "wb") as f:
                f.write(header + body)
            os.replace(tmp, target)
        return bpe

    @classmethod
    def load(cls, path: str) -> Bpe | None:
        """The tokenizer of ``path``, or None if it is not the kind modelled here."""
        with open(path, "rb") as f:
            spec = msgspec.json.decode(f.read(), type=_File)
        m = spec.model
        modelled = (
            m.type == "BPE" and m.byte_fallback and m.dropout is None and not m.ignore_merges
            and m.continuing_subword_prefix is None and m.end_of_word_suffix is None
            and msgspec.json.decode(spec.normalizer) == _NORMALIZER
            and msgspec.json.decode(spec.pre_tokenizer) is None
        )  # fmt: skip
        if not modelled:
            return None
        # "a b" -> rank: a merge is looked up by the two symbols it joins.
        ranks = dict(zip(m.merges, range(len(m.merges)), strict=True))
        return cls(m.vocab, ranks, [a.content for a in spec.added_tokens])

    def encode(self, text: str) -> list[int] | None:
        """The ids of ``text`` (no special tokens added), or None where the library must."""
        if any(s in text for s in self.specials):
            return None
        if not text:
            return []
        symbols = self._symbols("▁" + text.replace(" ", "▁"))
        if symbols is None:
            return None
        merged = self._merge(symbols)
        ids = [self.vocab.get(s) for s in merged]
        return None if None in ids else ids  # type: ignore[return-value]

    def _symbols(self, text: str) -> list[str] | None:
        out: list[str] = []
        vocab = self.vocab
        for ch in text:
            if ch in vocab:
                out.append(ch)
                continue
            for b in ch.encode("utf-8", "surrogatepass"):
                token = f"<0x{b:02X}>"
                if token not in vocab:
                    return None  # an unknown token: fused unknowns are the library's job
                out.append(token)
        return out

    def _merge(self, symbols: list[str]) -> list[str]:
        """Merge the lowest-ranked adjacent pair, leftmost first, until none is left."""
        ranks = self.ranks
        n = len(symbols)
        prev = list(range(-1, n - 1))
        nxt = [*range(1, n), -1]
        alive = [True] * n
        heap: list[tuple[int, int, str, str]] = []
        for i in range(n - 1):
            rank = ranks.get(f"{symbols[i]} {symbols[i + 1]}")
            if rank is not None:
                heap.append((rank, i, symbols[i], symbols[i + 1]))
        heapq.heapify(heap)
        while heap:
            rank, i, left, right = heapq.heappop(heap)
            j = nxt[i]
            # As the library does: an entry still applies while the pair now at its place
            # is a merge that makes the same symbol.
            if not alive[i] or j < 0:
                continue
            if symbols[i] + symbols[j] != left + right:
                continue
            if f"{symbols[i]} {symbols[j]}" not in ranks:
                continue
            left, right = symbols[i], symbols[j]
            symbols[i] = left + right
            alive[j] = False
            nxt[i] = nxt[j]
            if nxt[j] >= 0:
                prev[nxt[j]] = i
            p, q = prev[i], nxt[i]
            if p >= 0:
                r = ranks.get(f"{symbols[p]} {symbols[i]}")
                if r is not None:
                    heapq.heappush(heap, (r, p, symbols[p], symbols[i]))
            if q >= 0:
                r = ranks.get(f"{symbols[i]} {symbols[q]}")
                if r is not None:
                    heapq.heappush(heap, (r, i, symbols[i], symbols[q]))
        return [s for s, keep in zip(symbols, alive, strict=True) if keep]


def _open_cached(path: str, st: os.stat_result) -> Bpe | None:
    try:
        with open(path, "rb") as f:
            data = memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
    except (OSError, ValueError):
        return None
    if len(data) < _HEADER.size:
        return None
    magic, size, mtime, crc, vocab, ranks, specials = _HEADER.unpack_from(data)
    start = _HEADER.size
    if (magic, size, mtime) != (_MAGIC, st.st_size, st.st_mtime_ns):
        return None
    # Checked whole (about a millisecond): a damaged cache must not give other ids.
    if len(data) != start + vocab + ranks + specials or zlib.crc32(data[start:]) != crc:
        note_damage(path, "the tokenizer's checksum or length does not match")
        return None
    try:
        names = msgspec.msgpack.decode(data[start + vocab + ranks :], type=list[str])
        tables = []
        for begin in (start, start + vocab):
            (slots,) = struct.unpack_from("<Q", data, begin)
            if slots & (slots - 1) or 8 + 8 * slots > len(data) - begin:
                return None
            tables.append(Table(data, begin, slots))
    except (msgspec.DecodeError, struct.error):
        return None
    return Bpe(tables[0], tables[1], names)
