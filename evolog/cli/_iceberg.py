"""``evolog publish iceberg`` and ``evolog sql --iceberg``: :mod:`evolog.iceberg` from the
shell. Registering them imports neither pyiceberg nor pyarrow.

Errors print as one line (``evolog: error: ...``) and exit 2 for bad input, 1 otherwise.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._common import store_path

if TYPE_CHECKING:
    import pyarrow as pa

from evolog.iceberg import DEFAULT_TABLE


def add_publish_commands(sub: Any) -> None:
    """Register ``publish`` (its one target: ``iceberg``) on the ``evolog`` subparsers."""
    from ._help import doc

    p = sub.add_parser(
        "publish", help="publish the sealed log to a shared table format", **doc("publish")
    )
    targets = p.add_subparsers(dest="target", required=True, metavar="TARGET")
    s = targets.add_parser(
        "iceberg",
        help="register the store's sealed segments in an Apache Iceberg table",
        **doc("publish iceberg"),
    )
    s.add_argument(
        "catalog",
        help="a warehouse directory (SQLite catalog in it, created if missing), a SQLAlchemy "
        "URI, an http(s):// REST catalog, or @NAME of a pyiceberg-configured catalog",
    )
    s.add_argument("--table", default=DEFAULT_TABLE, help=f"NAMESPACE.NAME ({DEFAULT_TABLE})")
    s.add_argument("--store-id", help="this store's id in the table (default: host:/path/of/store)")
    s.add_argument(
        "--warehouse",
        help="the warehouse of a SQL or REST catalog given by URI: a directory, or "
        "s3://BUCKET/PREFIX (segments are then uploaded there)",
    )
    _s3_options(s)
    s.add_argument("--seal", action="store_true", help="seal the WAL first (else: sealed only)")
    s.set_defaults(func=run_publish)


def _s3_options(s: Any) -> None:
    # Credentials are not options (a command line is visible to every user of the
    # machine): AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment.
    s.add_argument(
        "--s3-endpoint",
        metavar="URL",
        help="the S3 server of an s3:// warehouse (default: $AWS_ENDPOINT_URL, else AWS)",
    )
    s.add_argument(
        "--s3-region", metavar="NAME", help="its region (default: $AWS_REGION, else us-east-1)"
    )


def add_sql_options(s: Any) -> None:
    """``evolog sql``'s options for reading an Iceberg table instead of the store."""
    s.add_argument(
        "--iceberg",
        metavar="CATALOG:TABLE",
        help="query this Iceberg table (as the view events) instead of the store, "
        "e.g. ./warehouse:evolog.events (needs evolog[iceberg])",
    )
    s.add_argument("--snapshot", type=int, help="with --iceberg: read this snapshot id")
    s.add_argument("--warehouse", help="with --iceberg: the warehouse of a catalog URI")
    _s3_options(s)


def _one_line_errors(func: Callable[[Any], int]) -> Callable[[Any], int]:
    def wrapper(args: Any) -> int:
        from evolog.iceberg import IcebergError

        try:
            return func(args)
        except IcebergError as exc:
            print(f"evolog: error: {' '.join(str(exc).split())}", file=sys.stderr)
            return 2 if isinstance(exc, ValueError) else 1

    return wrapper


@_one_line_errors
def run_publish(args: Any) -> int:
    """``evolog publish iceberg CATALOG``."""
    import msgspec

    from evolog.iceberg import publish

    # pyiceberg logs each commit it retries after losing a race to another publisher;
    # the command's output is its JSON result (or one error line), not a log.
    logging.getLogger("pyiceberg").setLevel(logging.ERROR)
    store = store_path(args)
    if args.seal:
        from evolog.eventlog import EventLog

        with EventLog(store, auto_seal="off") as log:
            log.seal()
    result = publish(
        store,
        args.catalog,
        args.table,
        store_id=args.store_id,
        warehouse=args.warehouse,
        s3_endpoint=args.s3_endpoint,
        s3_region=args.s3_region,
    )
    out = msgspec.json.format(msgspec.json.encode(result._asdict()), indent=2)
    sys.stdout.buffer.write(out + b"\n")
    return 0


def iceberg_result(args: Any) -> tuple[pa.Table, str | None]:
    """``evolog sql --iceberg CATALOG:TABLE QUERY``: the result, and where ``--out`` writes
    it (checked before the query runs: never into a local warehouse)."""
    from evolog.iceberg import iceberg_sql, local_warehouse, split_target

    as_of, as_of_ts = None, None
    if args.as_of is not None:
        from ._common import parse_as_of

        as_of, as_of_ts = parse_as_of(args.as_of)
    out = None
    if args.out:
        from evolog.projections import outside_store

        warehouse = local_warehouse(split_target(args.iceberg)[0])
        out = outside_store(warehouse, args.out, "--out") if warehouse else args.out
    table = iceberg_sql(
        args.iceberg,
        args.query,
        snapshot_id=args.snapshot,
        as_of=as_of,
        as_of_ts=as_of_ts,
        warehouse=args.warehouse,
        s3_endpoint=getattr(args, "s3_endpoint", None),
        s3_region=getattr(args, "s3_region", None),
    )
    return table, out
