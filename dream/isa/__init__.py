"""The dream instruction set: opcodes, the program model, the parser and serializer of its
text form, argument rules, and the VM that applies a program to the memory graph.

Users import the public names from the parent package; ``__all__`` here is what
other parts of evolog use (tests/test_architecture.py keeps them off the private modules).
"""

from typing import TYPE_CHECKING

from evolog._lazy import lazy_exports

if TYPE_CHECKING:
    from ._opcodes import PHASE_OPCODES


__all__ = [
    "PHASE_OPCODES",
]


# Names other parts of evolog use load on first use: importing this package costs no
# more than it did before they were exported.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._opcodes": "PHASE_OPCODES",
    },
    globals(),
)
