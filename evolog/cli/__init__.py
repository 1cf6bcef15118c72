"""The ``evolog`` command line: the argument parser and one module per command family.

Users import the public names from the parent package; ``__all__`` here is what
other parts of evolog use (tests/test_architecture.py keeps them off the private modules).
"""

from typing import TYPE_CHECKING

from evolog._lazy import lazy_exports

if TYPE_CHECKING:
    from ._common import print_json, store_path
    from ._dream import demo_dream
    from ._help import help_formatter, parser_doc
    from ._main import main


__all__ = [
    "demo_dream",
    "help_formatter",
    "main",
    "parser_doc",
    "print_json",
    "store_path",
]


# Names other parts of evolog use load on first use: importing this package costs no
# more than it did before they were exported.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._dream": "demo_dream",
        "._help": "help_formatter parser_doc",
        "._main": "main",
        "._common": "print_json store_path",
    },
    globals(),
)
