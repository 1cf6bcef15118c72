"""The plugin's ``hooks/hooks.json``, derived from the events the hook records.

``python -m evolog.doctor._plugin > plugin/hooks/hooks.json`` rewrites it; a test checks that
the file in the repository is what this prints, so a new hook event cannot be left out of it.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["plugin_hooks", "plugin_hooks_text"]

#: Claude Code substitutes ``${CLAUDE_PLUGIN_ROOT}`` and ``${user_config.*}`` (the options
#: given to ``claude plugin install --config``) into a plugin's hook commands; the launcher
#: finds the executable and the store from them.
COMMAND = (
    "EVOLOG_BIN='${user_config.evolog}' EVOLOG_PLUGIN_STORE='${user_config.store}' "
    '"${CLAUDE_PLUGIN_ROOT}/bin/evolog-launch" hook claude-code'
)


def plugin_hooks() -> dict[str, Any]:
    from evolog.hook import HOOK_EVENTS, TOOL_EVENTS

    hooks: dict[str, Any] = {}
    for name in HOOK_EVENTS:
        # A list per event, so the worker's http hooks can stand beside the command hook.
        entry: dict[str, Any] = {"hooks": [{"type": "command", "command": COMMAND}]}
        hooks[name] = [{"matcher": "*", **entry} if name in TOOL_EVENTS else entry]
    return {
        "description": (
            "evolog: record the session and inject what it recalls (posted to the worker "
            "with curl; the command hook when no worker answers, which starts it)"
        ),
        "hooks": hooks,
    }


def plugin_hooks_text() -> str:
    return json.dumps(plugin_hooks(), indent=2) + "\n"


if __name__ == "__main__":
    print(plugin_hooks_text(), end="")
