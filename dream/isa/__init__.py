"""The dream instruction set: opcodes, the program model, the parser and serializer of its
text form, argument rules, and the VM that applies a program to the memory graph.

What other parts of evolog import from here.
"""

from typing import TYPE_CHECKING

from evolog._lazy import lazy_exports

if TYPE_CHECKING:
    from ._opcodes import PHASE_OPCODES


__all__ = [
    "PHASE_OPCODES",
]


__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._opcodes": "PHASE_OPCODES",
    },
    globals(),
)
