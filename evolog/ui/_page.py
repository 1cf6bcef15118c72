"""The page's frame and the HTML helpers every view shares.

Everything recorded is untrusted (prompts, tool output, notes written by agents): it reaches
the page only through :func:`text` (HTML-escaped) or :func:`memory_text` (made safe as memory
is shown to agents, then escaped). The frame has no inline script or style, so the strict
Content-Security-Policy below holds.
"""

from __future__ import annotations

import datetime as _dt
from html import escape
from importlib import resources

from evolog.projections.memory import safe_text

#: Only this origin's files: no inline script, no other host, no plugin, no framing.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
VIEWS = ("timeline", "memory", "survival", "edges")
STATIC = {"ui.js": "text/javascript", "ui.css": "text/css"}


def text(value: object, limit: int = 2000) -> str:
    """Recorded text as HTML (escaped, cut to ``limit`` characters)."""
    s = "" if value is None else str(value)
    return escape(s if len(s) <= limit else s[:limit] + "…")


def memory_text(value: str, limit: int = 400) -> str:
    """Memory as agents are shown it (control characters and instructions made harmless)."""
    return escape(safe_text(value, limit))


def when(ts_us: int | None) -> str:
    if not ts_us:
        return ""
    moment = _dt.datetime.fromtimestamp(ts_us / 1e6, _dt.UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def button(label: str, op: str, **data: str) -> str:
    """An action button; ui.js posts ``op`` and its ``data-*`` as the action."""
    attrs = "".join(f' data-{k}="{escape(v)}"' for k, v in sorted(data.items()))
    return f'<button type="button" class="act" data-op="{op}"{attrs}>{escape(label)}</button>'


def static_file(name: str) -> bytes:
    return resources.files("evolog.ui").joinpath("static", name).read_bytes()


def shell() -> str:
    """The frame: navigation, filters, the as-of control and an empty view ui.js fills."""
    tabs = "".join(
        f'<a href="#{v}" class="tab" data-view="{v}">{v.capitalize()}</a>' for v in VIEWS
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>evolog</title><link rel="stylesheet" href="/ui/static/ui.css">
<script src="/ui/static/ui.js" defer></script></head>
<body><header><h1>evolog</h1><nav>{tabs}</nav></header>
<form id="filters" autocomplete="off">
<label>as of seq <input name="as_of" id="as_of" inputmode="numeric" placeholder="now"></label>
<input type="range" id="as_of_slider" min="0" max="0" value="0" aria-label="as of seq">
<label>or time <input name="at" id="at" placeholder="YYYY-MM-DDTHH:MM:SS"></label>
<label>agent <input name="agent"></label><label>session <input name="session"></label>
<label>since <input name="since" placeholder="YYYY-MM-DD"></label>
<label>until <input name="until" placeholder="YYYY-MM-DD"></label>
<label>recall query <input name="q"></label>
<button type="submit">show</button> <button type="button" id="live">live</button>
<span id="status" role="status"></span></form>
<div id="error" role="alert" hidden></div>
<main id="view"><p>loading…</p></main></body></html>
"""


__all__ = [
    "CSP",
    "HEADERS",
    "STATIC",
    "VIEWS",
    "button",
    "memory_text",
    "shell",
    "static_file",
    "text",
    "when",
]
