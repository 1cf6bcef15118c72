"""Errors of :mod:`evolog.iceberg` (the tree is in the package docstring)."""

from __future__ import annotations


class IcebergError(Exception):
    """Base class of every error raised by :mod:`evolog.iceberg`."""


class MissingExtraError(IcebergError, ImportError):
    """pyiceberg (the optional extra ``evolog[iceberg]``) is not installed."""


class IcebergInputError(IcebergError, ValueError):
    """A bad argument: catalog, table name, store id, snapshot; nothing was done."""


class PublishRefusedError(IcebergError):
    """The store's segments cannot be published as they are (a segment that does not match
    its manifest entry, a manifest without hashes, files of another store under this store
    id); the table was left as it was."""


class CatalogError(IcebergError):
    """The catalog, pyiceberg or the file system failed underneath us."""
