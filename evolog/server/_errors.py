"""The server's errors: one base, and the HTTP problem every bad request becomes."""

from __future__ import annotations


class ServerError(Exception):
    """Base of every error the server package raises."""


class ConfigError(ServerError, ValueError):
    """The server cannot start as configured (a public bind without a token, a bad token
    file, a missing extra)."""


class Problem(ServerError):
    """A request the server answers with a 4xx/5xx JSON error.

    ``field`` names the part of the request at fault (a body field, a query parameter, a
    header), so a client can say what to fix.
    """

    def __init__(self, status: int, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field

    def body(self) -> dict[str, object]:
        return {"error": self.message, "field": self.field, "status": self.status}
