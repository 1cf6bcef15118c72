"""The local worker: one long-lived process per store that Claude Code's http hooks post to.

``evolog worker start|stop|status|run``. The worker is ``evolog serve``'s application (MCP
at ``/mcp``, the server's auth) plus ``POST /hook/claude-code``, which records a payload with
the command hook's own code (:func:`evolog.hook._hooks.answer_claude_code`) in-process, and
a background dream after ``Stop``/``SessionEnd``. The command hook stays the fallback.

Internal: nothing here is imported by ``import evolog`` or by the command hook's usual path.
"""

from typing import TYPE_CHECKING

from evolog._lazy import lazy_exports

if TYPE_CHECKING:
    from ._cli import add_worker_commands, status_of
    from ._files import read_record, read_token, running, stale
    from ._settings import print_http_settings, start_worker


__all__ = [
    "add_worker_commands",
    "print_http_settings",
    "read_record",
    "read_token",
    "running",
    "stale",
    "start_worker",
    "status_of",
]


__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._cli": "add_worker_commands status_of",
        "._settings": "print_http_settings start_worker",
        "._files": "read_record read_token running stale",
    },
    globals(),
)
