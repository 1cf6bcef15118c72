"""The local web viewer (``/ui``): the log, the credit chain, memory, survival and edges as of
any seq, with steering appended as events. Server-side HTML and SVG; the page loads nothing
from any other host (its script and style ship in the package).

``evolog ui`` opens it. Registering the command imports nothing of the server.
"""

from typing import TYPE_CHECKING

from evolog._lazy import lazy_exports

if TYPE_CHECKING:
    from ._cli import add_ui_commands, viewer_url
    from ._routes import PREFIX, render, routes

__all__ = ["PREFIX", "add_ui_commands", "render", "routes", "viewer_url"]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {"._cli": "add_ui_commands viewer_url", "._routes": "PREFIX render routes"},
    globals(),
)
