"""The WordLlama tokenizer (a SentencePiece-style BPE) in Python, for short texts.

Loading the file into the ``tokenizers`` library costs about three times what reading its
vocabulary and merges does, and a cold ``evolog route`` tokenizes one short task. The model
is simple: the text gets ``▁`` prepended and its spaces become ``▁`` (the normalizer; no
pre-tokenizer, so the whole text is one word), each character is a symbol (one symbol per
UTF-8 byte, ``<0xNN>``, for characters not in the vocabulary), and the adjacent pair with the
lowest merge rank is merged, leftmost first, until none is left. :meth:`Bpe.encode` gives the
``tokenizers`` library's ids (tests/test_embed.py checks it on arbitrary text); a text it
does not model (one holding a special token such as ``<s>``) returns None, and the caller
uses the library.
"""

from __future__ import annotations

import heapq
from typing import Final

import msgspec

__all__ = ["Bpe"]


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


class Bpe:
    """Vocabulary and merge ranks of one tokenizer file; see the module docstring."""

    def __init__(self, vocab: dict[str, int], ranks: dict[str, int], specials: list[str]) -> None:
        self.vocab = vocab
        self.ranks = ranks
        self.specials = specials

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
