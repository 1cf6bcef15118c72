"""The longest text one query may carry: a route's task, a recall's query, one advise signal.

Routing embeds and scores the whole task (about 55 ms per thousand characters on one core), so
a task of megabytes kept a server thread busy for minutes after its client had given up. One
limit, checked before any work, for the Python API, HTTP and MCP alike.
"""

from __future__ import annotations

from collections.abc import Callable

#: Characters (code points). A prompt or task description is far shorter; a pasted log or
#: file is not a task to route.
MAX_TASK_CHARS = 16_384


def check_length(text: object, where: str, error: Callable[[str], Exception]) -> None:
    """Raise ``error`` when ``text`` is a string longer than :data:`MAX_TASK_CHARS`."""
    if isinstance(text, str) and len(text) > MAX_TASK_CHARS:
        raise error(
            f"{where}: expected at most {MAX_TASK_CHARS} characters (MAX_TASK_CHARS); "
            f"got {len(text)}"
        )
