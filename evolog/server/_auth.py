"""Who may call a route: bearer tokens by scope, and loopback-only without them.

A server without tokens is reachable only from this machine, but a web page in a local
browser can still send requests to it. Two checks close that: the ``Host`` header must
name a loopback host (a DNS-rebinding page sends its own name), and request bodies must
be JSON or NDJSON (a cross-site form cannot send those without a preflight, which the
server never grants).
"""

from __future__ import annotations

import functools
import hmac
from collections.abc import Iterable
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


def authorize(
    config: ServerConfig, need: Need, authorization: str | None, host: str | None
) -> None:
    """Raise :class:`Problem` (401/403) unless the request may use a route needing ``need``."""
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
