"""Agent hooks (Claude Code and generic JSON): event mapping, content policy and files.

What other parts of evolog import from here.
"""

from typing import TYPE_CHECKING

from evolog._lazy import lazy_exports

if TYPE_CHECKING:
    from ._commands import add_control_commands
    from ._content import content_policy
    from ._credit import HOOK_PREFIX, Report, join_report, open_attempt, outcome_id
    from ._hooks import MAX_PAYLOAD_BYTES, answer_claude_code, dead_letter, run_hook
    from ._recall import HOOK_EVENTS, TOOL_EVENTS, answer_by, settings_text


__all__ = [
    "HOOK_EVENTS",
    "HOOK_PREFIX",
    "MAX_PAYLOAD_BYTES",
    "TOOL_EVENTS",
    "Report",
    "add_control_commands",
    "answer_by",
    "answer_claude_code",
    "content_policy",
    "dead_letter",
    "join_report",
    "open_attempt",
    "outcome_id",
    "run_hook",
    "settings_text",
]


__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._recall": "HOOK_EVENTS TOOL_EVENTS answer_by settings_text",
        "._credit": "HOOK_PREFIX Report join_report outcome_id open_attempt",
        "._hooks": "MAX_PAYLOAD_BYTES answer_claude_code dead_letter run_hook",
        "._commands": "add_control_commands",
        "._content": "content_policy",
    },
    globals(),
)
