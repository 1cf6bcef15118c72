"""Where a table's files live when that is not this machine's disk: object storage through
the S3 API (any server that speaks it), configured from options and the environment.

The properties built here are pyiceberg's FileIO properties, handed to the catalog: the
catalog's FileIO then writes the table's metadata, the publish uploads segments through
the same FileIO, and ``evolog sql --iceberg`` reads them back through it. Credentials come
from the environment only (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``), never from a command line where ``ps`` shows them, and no message
of this package includes them: catalog URIs are printed with their password masked.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from ._errors import IcebergInputError

#: Without a region pyiceberg asks AWS which region the bucket is in: a request to the
#: internet for every bucket, which a private S3 server cannot answer anyway.
DEFAULT_REGION = "us-east-1"
# Short enough that an unreachable endpoint fails a command in seconds rather than
# minutes (the SDK retries a failed connection a few times on its own).
_CONNECT_TIMEOUT = "5"
_REQUEST_TIMEOUT = "60"
_BUCKET = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]\Z")
_ENV_KEYS = (
    ("s3.access-key-id", "AWS_ACCESS_KEY_ID"),
    ("s3.secret-access-key", "AWS_SECRET_ACCESS_KEY"),
    ("s3.session-token", "AWS_SESSION_TOKEN"),
)


def s3_properties(
    endpoint: str | None = None,
    region: str | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """pyiceberg's S3 properties: ``endpoint`` and ``region`` if given, else from
    ``AWS_ENDPOINT_URL_S3`` / ``AWS_ENDPOINT_URL`` and ``AWS_REGION`` /
    ``AWS_DEFAULT_REGION``; credentials from the environment."""
    env = os.environ if env is None else env
    endpoint = endpoint or env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL")
    region = region or env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or DEFAULT_REGION
    props = {
        "s3.region": _check_region(region),
        "s3.connect-timeout": _CONNECT_TIMEOUT,
        "s3.request-timeout": _REQUEST_TIMEOUT,
        # The FileIO whose writes and reads this package relies on (pyiceberg would pick
        # it for s3:// anyway; fsspec's is not installed by the extra).
        "py-io-impl": "pyiceberg.io.pyarrow.PyArrowFileIO",
    }
    if endpoint:
        props["s3.endpoint"] = check_endpoint(endpoint)
    # Passed on explicitly: without keys the AWS SDK goes looking for them, the cloud
    # instance metadata service among the places it asks.
    for prop, var in _ENV_KEYS:
        if env.get(var):
            props[prop] = env[var]
    return props


def check_endpoint(endpoint: object) -> str:
    """An ``http(s)://host[:port]`` endpoint, else :class:`IcebergInputError`."""
    parts = urlsplit(endpoint) if isinstance(endpoint, str) else None
    try:
        ok = parts is not None and parts.scheme in ("http", "https") and bool(parts.hostname)
        ok = ok and parts is not None and (parts.port is None or parts.port > 0)
    except ValueError:  # a port that is not a number
        ok = False
    if not ok or parts is None or parts.path not in ("", "/") or parts.query:
        raise IcebergInputError(
            f"S3 endpoint: expected http(s)://HOST[:PORT] (e.g. http://127.0.0.1:9000); "
            f"got {endpoint!r}"
        )
    return str(endpoint).rstrip("/")


def _check_region(region: str) -> str:
    if not re.fullmatch(r"[a-z0-9-]{1,40}", region):
        raise IcebergInputError(f"S3 region: expected e.g. us-east-1; got {region!r}")
    return region


def check_warehouse(warehouse: str) -> str:
    """A warehouse location: a directory, or a URI; an ``s3://`` one must name a valid
    bucket (``s3://BUCKET[/PREFIX]``)."""
    if not isinstance(warehouse, str) or not warehouse.strip():
        raise IcebergInputError(f"warehouse: expected a directory or URI; got {warehouse!r}")
    if is_s3(warehouse):
        parts = urlsplit(warehouse)
        if not _BUCKET.match(parts.netloc) or "//" in parts.path or parts.query:
            raise IcebergInputError(
                "warehouse: expected s3://BUCKET[/PREFIX] (a bucket of 3-63 lowercase "
                f"letters, digits, '.' or '-'); got {warehouse!r}"
            )
        return warehouse.rstrip("/")
    return warehouse


def is_s3(location: str) -> bool:
    return location.lower().startswith(("s3://", "s3a://", "s3n://"))


def is_local(location: str) -> bool:
    """A location on this machine's file system (a path, or a ``file:`` URI)."""
    return "://" not in location or location.startswith("file:")


def redact(uri: str) -> str:
    """``uri`` with the password of its user part (if any) masked, for messages."""
    scheme, sep, rest = uri.partition("://")
    if not sep:
        return uri
    auth, at, host = rest.partition("@")
    if not at or ":" not in auth or "/" in auth:
        return uri
    return f"{scheme}://{auth.partition(':')[0]}:***@{host}"
