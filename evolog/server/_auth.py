"""Who may call a route: bearer tokens by scope, and loopback-only without them.

A server without tokens is reachable only from this machine, but a web page in a local
browser can still send requests to it. Three checks close that: the ``Host`` header must
name a loopback host (a DNS-rebinding page sends its own name); a request that carries an
``Origin`` (browsers send one with every cross-origin POST, forms and ``no-cors`` fetches
included) must come from a loopback origin; and request bodies must be JSON or NDJSON (a
cross-site form cannot send those without a preflight, which the server never grants).
Clients that are not browsers send no ``Origin``.
"""

from __future__ import annotations

import functools
import hmac
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Literal

from ._config import ServerConfig, is_loopback
from ._errors import Problem

Need = Literal["open", "read", "write", "kg"]


def _matches(token: str, allowed: Iterable[str]) -> bool:
    # Every candidate is compared (no early exit) in constant time per comparison.
    found = False
    for candidate in allowed:
        found |= hmac.compare_digest(token.encode(), candidate.encode())
    return found


def bearer(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer TOKEN`` header, or None."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def host_name(host_header: str | None) -> str:
    """The host part of a ``Host`` header (``[::1]:8420`` -> ``::1``)."""
    host = (host_header or "").strip()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


@functools.lru_cache(maxsize=256)
def _loopback_host(host_header: str | None) -> bool:
    # Every request on a server without tokens asks this of its Host header, and clients
    # send the same few headers: parsing the address once each saves a share of an append.
    return is_loopback(host_name(host_header))


@functools.lru_cache(maxsize=256)
def _loopback_origin(origin: str) -> bool:
    """Whether an ``Origin`` header names a page served from this machine (``null``, the
    origin of sandboxed and ``file:`` pages, does not)."""
    try:
        host = urllib.parse.urlsplit(origin.strip()).hostname
    except ValueError:
        return False
    return host is not None and is_loopback(host)


def authorize(config: ServerConfig, need: Need, headers: Mapping[str, str]) -> None:
    """Raise :class:`Problem` (401/403) unless the request with these headers may use a
    route needing ``need``."""
    authorization, host = headers.get("authorization"), headers.get("host")
    tokens = config.tokens
    if need == "open":
        return
    general = tokens.read | tokens.write
    if need == "kg" and tokens.kg:
        allowed: frozenset[str] = tokens.kg | tokens.write
    elif not general:
        # No tokens: loopback only, so the request must also name a loopback host.
        if not _loopback_host(host):
            raise Problem(
                403,
                f"expected a loopback Host header on a server without tokens; got {host!r}",
                "Host",
            )
        origin = headers.get("origin")
        if origin is not None and not _loopback_origin(origin):
            raise Problem(
                403,
                f"expected no Origin or a loopback one on a server without tokens; got {origin!r}",
                "Origin",
            )
        return
    else:
        allowed = tokens.read | tokens.write if need == "read" else tokens.write
    token = bearer(authorization)
    if token is None:
        raise Problem(401, "expected 'Authorization: Bearer TOKEN'; got none", "Authorization")
    if not _matches(token, allowed):
        if need != "kg" and _matches(token, general | tokens.kg):
            raise Problem(
                403, f"this token cannot {need}; a {need} token is needed", "Authorization"
            )
        raise Problem(401, "expected a valid bearer token; got an unknown one", "Authorization")
