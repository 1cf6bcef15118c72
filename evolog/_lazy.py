"""Public names that load on first use, for the packages of the ``evolog`` namespace.

A hook process that appends one event must not pay for the ledger, the embedders or DuckDB,
so a package lists, per private module, the names that module provides and imports the
module only when one of them is first looked up. A package keeps its ``__all__`` (sorted, the
names users see) and an ``if TYPE_CHECKING:`` block with the same imports, which is what type
checkers read; tests/packaging/test_architecture.py checks that the three agree.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, modules: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Return a package's ``__getattr__`` and ``__dir__``.

    ``modules`` maps a module, relative to ``package`` (``"._log"``), to the space-separated
    names it provides; ``namespace`` is the package's ``globals()``, where a loaded name is
    stored so later lookups never reach ``__getattr__`` again.
    """
    where = {name: module for module, names in modules.items() for name in names.split()}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    __getattr__.lazy_names = frozenset(where)  # type: ignore[attr-defined]
    return __getattr__, __dir__
