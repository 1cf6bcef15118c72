"""Setting evolog up for Claude Code, and checking the setup: ``evolog doctor``.

Everything printed for a user to paste (the hooks block of ``--print-settings``, ``claude
mcp add``, the plugin's install line) names the running installation by absolute path and
the store by absolute path: a hook runs in a shell whose ``PATH`` need not hold the virtual
environment evolog was installed into, so a bare ``evolog`` there fails ("not found") and
every event of the session is lost. ``evolog doctor`` checks that what Claude Code will run
works, and says in one line per problem what to do.

Internal: nothing here is imported by ``import evolog`` or by the hook.
"""

from typing import TYPE_CHECKING

from evolog._lazy import lazy_exports

if TYPE_CHECKING:
    from ._cli import add_doctor_commands
    from ._paths import evolog_command


__all__ = [
    "add_doctor_commands",
    "evolog_command",
]


__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._cli": "add_doctor_commands",
        "._paths": "evolog_command",
    },
    globals(),
)
