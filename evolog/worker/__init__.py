"""The local worker: one long-lived process per store that Claude Code's http hooks post to.

``evolog worker start|stop|status|run``. The worker is ``evolog serve``'s application (MCP
at ``/mcp``, the server's auth) plus ``POST /hook/claude-code``, which records a payload with
the command hook's own code (:func:`evolog.hook._hooks.answer_claude_code`) in-process, and
a background dream after ``Stop``/``SessionEnd``. The command hook stays the fallback.

Internal: nothing here is imported by ``import evolog`` or by the command hook's usual path.
"""

__all__: list[str] = []
