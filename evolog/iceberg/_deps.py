"""The optional dependency: pyiceberg is imported only here, only when a command needs it."""

from __future__ import annotations

import importlib
from types import ModuleType

from ._errors import MissingExtraError

_HINT = "pip install 'evolog[iceberg]'"


def need(module: str = "pyiceberg") -> ModuleType:
    """``module`` imported, or :class:`MissingExtraError` naming the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing = exc.name or module
        raise MissingExtraError(
            f"Iceberg support needs the optional extra 'iceberg' ({_HINT}); "
            f"{missing} is not installed"
        ) from None
