"""The table's schema: the events' columns plus ``store_id``, grown as events grow.

``store_id`` is an identity partition and is not in the segment files (publishing never
rewrites them): Iceberg readers take a column missing from a data file from its identity
partition value (the spec's rule for metadata-only migrations), so every engine sees it.
Columns are matched to the files by name (the table's default name mapping): the
segments carry no Iceberg field ids.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import pyarrow as pa

from ._catalog import backend_errors

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table, Transaction

STORE_ID = "store_id"
FORMAT_VERSION = "2"


def table_arrow_schema(events: pa.Schema) -> pa.Schema:
    """``store_id`` then the events' columns (the segment schema)."""
    return pa.schema([pa.field(STORE_ID, pa.string()), *events])


def load_or_create(catalog: Catalog, ident: tuple[str, ...], events: pa.Schema) -> Table:
    """The table, created (with its namespace) if missing; two publishers creating it at
    once both end up with the one that won."""
    from pyiceberg.exceptions import (
        CommitFailedException,
        NoSuchTableError,
        TableAlreadyExistsError,
    )

    name = ".".join(ident)
    with backend_errors(f"loading table {name}"):
        try:
            return catalog.load_table(ident)
        except NoSuchTableError:
            pass
        _ensure_namespace(catalog, ident[:-1])
        try:
            tx = catalog.create_table_transaction(
                ident,
                schema=table_arrow_schema(events),
                properties={"format-version": FORMAT_VERSION},
            )
            with tx.update_spec() as spec:
                spec.add_identity(STORE_ID)
            _ensure_name_mapping(tx)
            tx.commit_transaction()
        except (TableAlreadyExistsError, CommitFailedException):
            pass  # (the SQL catalog reports a lost creation race as a failed commit)
        return catalog.load_table(ident)


def _ensure_namespace(catalog: Catalog, namespace: tuple[str, ...]) -> None:
    try:
        catalog.create_namespace_if_not_exists(namespace)
    except Exception:
        # The SQL catalog checks, then inserts: a publisher that loses that race to another
        # gets the database's unique-constraint error, not NamespaceAlreadyExistsError.
        if not catalog.namespace_exists(namespace):
            raise


def _ensure_name_mapping(tx: Transaction) -> None:
    from pyiceberg.table import TableProperties

    if tx.table_metadata.name_mapping() is None:
        mapping = tx.table_metadata.schema().name_mapping.model_dump_json()
        tx.set_properties({TableProperties.DEFAULT_NAME_MAPPING: mapping})


def grow(tx: Transaction, schemas: Iterable[pa.Schema]) -> list[str]:
    """Add the columns of ``schemas`` the table lacks (one schema update, in ``tx``);
    return their names. The name mapping follows (pyiceberg updates it with the schema)."""
    _ensure_name_mapping(tx)
    have = set(tx.table_metadata.schema().column_names)
    new: dict[str, pa.Field] = {}
    for schema in schemas:
        for field in schema:
            if field.name not in have and field.name not in new:
                new[field.name] = field
    if new:
        # Never required: rows already in the table have no value for them.
        fields = [f.with_nullable(True).remove_metadata() for f in new.values()]
        with tx.update_schema() as update:
            update.union_by_name(pa.schema(fields))
    return sorted(new)


def file_schema(metadata: object) -> pa.Schema:
    """The Arrow schema of a Parquet footer."""
    return metadata.schema.to_arrow_schema()  # type: ignore[attr-defined]
