"""Publishing stores into an Apache Iceberg table, and querying it (``evolog[iceberg]``).

Sealed segments are registered in place (the Parquet files stay byte-identical; only
Iceberg metadata is written), one snapshot per publish, under the store's ``store_id``
partition. A table whose warehouse is in object storage (``s3://BUCKET/PREFIX``, a catalog
in PostgreSQL or a REST catalog) gets a copy of each segment instead, uploaded once under
its SHA-256, so a fleet's table is read where no store's folder is. pyiceberg is an
optional extra: importing this package does not import it (about 0.9 s); the first call
that needs it does, or raises :class:`MissingExtraError`.

Errors (all derive from :class:`IcebergError`; pyiceberg's, SQLAlchemy's and the file
system's are mapped, never raised as they are)::

    IcebergError
    ├── MissingExtraError     pyiceberg (evolog[iceberg]) is not installed; also ImportError
    ├── IcebergInputError     a bad catalog, table, store id or snapshot; also ValueError
    ├── PublishRefusedError   a segment that does not match its manifest entry, ...
    └── CatalogError          the catalog or pyiceberg failed underneath us

``evolog sql --iceberg`` refuses queries with the errors of ``evolog sql``
(:mod:`projections`' ``RefusedQueryError`` and ``QueryError``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports
from ._errors import (
    CatalogError,
    IcebergError,
    IcebergInputError,
    MissingExtraError,
    PublishRefusedError,
)

if TYPE_CHECKING:
    from ._catalog import DEFAULT_TABLE, local_warehouse, split_target
    from ._publish import PublishResult, default_store_id, publish
    from ._read import iceberg_sql

__all__ = [
    "DEFAULT_TABLE",
    "CatalogError",
    "IcebergError",
    "IcebergInputError",
    "MissingExtraError",
    "PublishRefusedError",
    "PublishResult",
    "default_store_id",
    "iceberg_sql",
    "local_warehouse",
    "publish",
    "split_target",
]

# Loaded on first use: `evolog sql` registers its --iceberg options from this package and
# must not pay for pyarrow or the event log's modules to do so.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._catalog": "DEFAULT_TABLE local_warehouse split_target",
        "._publish": "PublishResult default_store_id publish",
        "._read": "iceberg_sql",
    },
    globals(),
)
