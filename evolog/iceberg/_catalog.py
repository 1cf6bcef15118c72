"""Which catalog and table: parsing what the user names, opening it, mapping its errors.

A catalog is named one of four ways:

- a directory: the default, a SQL catalog in SQLite at ``DIR/catalog.db`` whose warehouse
  (table metadata) is ``DIR`` itself;
- ``sqlite:///...``, ``postgresql://...`` (any SQLAlchemy URI): a SQL catalog there, its
  warehouse given with ``warehouse`` (for SQLite, the database's directory by default);
- ``http://...`` or ``https://...``: a REST catalog;
- ``@NAME``: a catalog configured for pyiceberg (``~/.pyiceberg.yaml`` or
  ``PYICEBERG_CATALOG__NAME__*`` variables), for anything else pyiceberg supports.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ._deps import need
from ._errors import CatalogError, IcebergError, IcebergInputError
from ._storage import check_warehouse, redact

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.table import Table

DEFAULT_NAMESPACE = "evolog"
DEFAULT_TABLE = "evolog.events"
CATALOG_FILE = "catalog.db"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_EXAMPLE = "e.g. ./warehouse:evolog.events"


def split_target(text: str) -> tuple[str, str]:
    """``CATALOG:TABLE`` as (catalog, table); the table is after the last colon (catalog
    URIs have colons of their own)."""
    catalog, colon, table = text.rpartition(":")
    if not colon or not catalog or not table:
        raise IcebergInputError(f"--iceberg: expected CATALOG:TABLE ({_EXAMPLE}); got {text!r}")
    table_identifier(table)
    return catalog, table


def table_identifier(name: str) -> tuple[str, ...]:
    """``ns.table`` as its parts; a bare name goes in the ``evolog`` namespace."""
    parts = tuple(name.split(".")) if isinstance(name, str) else ()
    if not parts or not all(_NAME.match(p) for p in parts):
        raise IcebergInputError(
            f"table: expected NAME or NAMESPACE.NAME (letters, digits, _); got {name!r}"
        )
    return parts if len(parts) > 1 else (DEFAULT_NAMESPACE, parts[0])


def table_name(table: Table) -> str:
    """``namespace.name`` of a loaded table."""
    return ".".join(table.name())


def local_warehouse(spec: str) -> str | None:
    """The warehouse directory of a catalog named by its directory (else None)."""
    if spec.startswith("@") or "://" in spec:
        return None
    return os.path.abspath(os.path.expanduser(spec))


def open_catalog(
    spec: str,
    *,
    create: bool,
    warehouse: str | None = None,
    properties: dict[str, str] | None = None,
) -> Catalog:
    """The catalog ``spec`` names (see the module docstring).

    ``create``: a directory catalog that does not exist yet is made (a publish); a reader
    gets :class:`IcebergInputError` instead of an empty catalog. ``properties``: the
    FileIO's (:func:`._storage.s3_properties`), for a catalog given by URI.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise IcebergInputError(f"catalog: expected a directory, URI or @NAME; got {spec!r}")
    if warehouse is not None:
        warehouse = check_warehouse(warehouse)
    props = dict(properties or {})
    need()
    if spec.startswith("@"):
        from pyiceberg.catalog import load_catalog

        with backend_errors(f"loading the pyiceberg catalog {spec[1:]!r}"):
            return load_catalog(spec[1:])
    scheme = spec.partition("://")[0].lower() if "://" in spec else ""
    if scheme in ("http", "https"):
        from pyiceberg.catalog import load_catalog

        props.update(type="rest", uri=spec)
        if warehouse:
            props["warehouse"] = warehouse
        with backend_errors(f"opening the REST catalog {redact(spec)}"):
            return load_catalog("evolog", **props)
    if scheme:
        # A reader needs no warehouse: each table's location is in the catalog.
        if not warehouse and (create or scheme.startswith("sqlite")):
            warehouse = _sqlite_dir(spec)
        return _sql_catalog(spec, warehouse, props)
    directory = local_warehouse(spec)
    assert directory is not None
    if not os.path.exists(os.path.join(directory, CATALOG_FILE)):
        if not create:
            raise IcebergInputError(
                f"catalog: expected an Iceberg catalog at {directory} ({CATALOG_FILE} in it, "
                "made by `evolog publish iceberg`); found none"
            )
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as exc:
            raise CatalogError(
                f"{directory}: cannot create the warehouse ({exc.strerror})"
            ) from None
    return _sql_catalog(f"sqlite:///{os.path.join(directory, CATALOG_FILE)}", directory)


def _sqlite_dir(uri: str) -> str:
    if not uri.startswith("sqlite:///"):
        raise IcebergInputError(
            f"catalog: a SQL catalog at {redact(uri)} needs a warehouse "
            "(--warehouse DIR or URI, e.g. s3://BUCKET/PREFIX)"
        )
    return os.path.dirname(os.path.abspath(uri[len("sqlite:///") :]))


def _sql_catalog(uri: str, warehouse: str | None, props: dict[str, str] | None = None) -> Catalog:
    need("sqlalchemy")
    if uri.startswith("postgresql://"):
        # The driver `evolog[iceberg]` installs, psycopg 3, named: SQLAlchemy's default for
        # a bare postgresql:// is psycopg2 before 2.1 and psycopg after.
        uri = "postgresql+psycopg://" + uri[len("postgresql://") :]
    if uri.startswith("postgresql+psycopg://"):
        need("psycopg")
    from pyiceberg.catalog.sql import SqlCatalog

    props = dict(props or {})
    if warehouse is not None:
        location = warehouse if "://" in warehouse else f"file://{os.path.abspath(warehouse)}"
        props["warehouse"] = location
    with backend_errors(f"opening the SQL catalog {redact(uri)}"):
        return SqlCatalog("evolog", uri=uri, **props)


def close_catalog(catalog: Catalog) -> None:
    """Close a SQL catalog's connections now rather than when it is collected."""
    engine = getattr(catalog, "engine", None)
    if engine is not None:
        with contextlib.suppress(Exception):
            engine.dispose()


def predicate(kind: str, column: str, value: object) -> BooleanExpression:
    """A pyiceberg row filter ``column <op> value`` (``kind``: EqualTo, LessThanOrEqual).

    Built from the class by name: pyiceberg's predicates are pydantic models whose
    declared signature is not the one their ``__init__`` takes."""
    from pyiceberg import expressions

    cls: Any = getattr(expressions, kind)
    result: BooleanExpression = cls(column, value)
    return result


def _is_backend(exc: BaseException) -> bool:
    """An error of pyiceberg or what it runs on (SQLAlchemy, pyarrow, the file system)."""
    if isinstance(exc, (OSError, ValueError, KeyError)):
        return True
    roots = ("pyiceberg", "sqlalchemy", "pyarrow", "duckdb", "fsspec", "requests", "pydantic")
    return any(c.__module__.split(".")[0] in roots for c in type(exc).__mro__)


@contextlib.contextmanager
def backend_errors(what: str) -> Iterator[None]:
    """pyiceberg's and its backends' errors as :class:`CatalogError` (a missing table or
    namespace as :class:`IcebergInputError`), one line, saying what we were doing."""
    try:
        yield
    except IcebergError:
        raise
    except Exception as exc:
        name = type(exc).__name__
        if name in ("NoSuchTableError", "NoSuchNamespaceError", "NoSuchIcebergTableError"):
            raise IcebergInputError(f"{what}: {one_line(exc)}") from None
        if not _is_backend(exc):
            raise
        raise CatalogError(f"{what}: {name}: {one_line(exc)}") from None


def one_line(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, OSError) and exc.strerror:
        text = f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return " ".join((text or type(exc).__name__).split())[:400]
