"""The ``evolog`` command line: the argument parser and one module per command family.

What other parts of evolog import from here.
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
