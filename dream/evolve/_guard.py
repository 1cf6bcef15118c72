"""What keeps two similar lessons apart whatever their similarity: shared by the dedup rules
of ReasoningBank and ReMe.

A similarity score (cosine, ``SequenceMatcher``) sees words, not what they say: "do not
cache node_modules" and "cache node_modules" score high, and so do two step sequences of
one task in another order ("read the logs -> patch the code -> run the tests" against
"read the logs -> run the tests -> restart the service": 0.74 wordllama cosine). Two
lessons may merge only if

* both or neither give a negative instruction (a clause opening with "do not", "don't",
  "never", "avoid", "stop"), and
* when both list steps (the offline extraction's ``Steps: a; b`` and ``Do: a -> b``), they
  list the same steps in the same order (case, spacing and end punctuation aside).

A guard only ever keeps apart what the rule would merge; it never merges anything.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["may_merge", "negative", "steps"]

_CLAUSE: Final = re.compile(r"[.;:!?,\n]+\s*|\s+-+\s+|\s+—\s+")
_NEGATIVE: Final = re.compile(r"(?:do not|don't|dont|never|avoid|stop)\b")
_STEPS: Final = (("steps:", ";"), ("do:", "->"))


def negative(text: str) -> bool:
    """Whether ``text`` gives a negative instruction (a clause opens with one)."""
    return any(_NEGATIVE.match(c) for c in _CLAUSE.split(text.lower().strip()))


def steps(text: str) -> tuple[str, ...] | None:
    """The steps ``text`` lists in the offline extraction's form, else None."""
    low = " ".join(text.lower().split())
    for prefix, sep in _STEPS:
        if low.startswith(prefix):
            return tuple(s.strip(" .;") for s in low[len(prefix) :].split(sep))
    return None


def may_merge(a: str, b: str) -> bool:
    """Whether lessons ``a`` and ``b`` may be merged at all (see the module docstring)."""
    if negative(a) != negative(b):
        return False
    sa, sb = steps(a), steps(b)
    return sa is None or sb is None or sa == sb
