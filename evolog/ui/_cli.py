"""``evolog ui``: open the viewer of the store's worker (or of a server at ``--url``).

The worker's token goes in the URL's fragment (``/ui#token=…``), which the browser keeps to
itself: it is never sent to a server nor in a Referer. The page keeps it for that tab only.
"""

from __future__ import annotations

import os
import sys
import urllib.parse
from typing import TYPE_CHECKING, Any

from evolog.cli import print_json, store_path

if TYPE_CHECKING:
    import argparse

_DESCRIPTION = (
    "Open the local web viewer: the timeline of prompts, recalls, steps, outcomes and credit;\n"
    "memory with its evidence and lineage; survival; edges; all as of any seq, with forget,\n"
    "pin, unpin, edit and undo appended as events. It is served by the store's worker (its\n"
    "token is passed in the URL's fragment) or by the `evolog serve` at --url (with --token\n"
    "or EVOLOG_TOKEN when it has tokens). Nothing is loaded from any other host."
)
_EXAMPLES = (
    "evolog worker start && evolog ui",
    "evolog ui --no-open --show-token     # print the URL to open elsewhere",
    "evolog ui --url http://127.0.0.1:8420",
)


def add_ui_commands(sub: Any) -> None:
    from evolog.cli import parser_doc

    s = sub.add_parser(
        "ui", help="open the local web viewer", **parser_doc(_DESCRIPTION, _EXAMPLES)
    )
    s.add_argument("--url", help="a server's base URL (default: the store's running worker)")
    s.add_argument("--token", help="the bearer token for --url (default: EVOLOG_TOKEN)")
    s.add_argument("--no-open", action="store_true", help="print the URL, open no browser")
    s.add_argument(
        "--show-token", action="store_true", help="print the URL with its token (it is a secret)"
    )
    s.set_defaults(func=run_ui)


def viewer_url(args: argparse.Namespace) -> tuple[str, str | None]:
    """The viewer's URL and the token it needs (None: the server has none)."""
    if args.url:
        parts = urllib.parse.urlsplit(args.url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"--url: expected http://HOST:PORT; got {args.url!r}")
        return args.url.rstrip("/") + "/ui", args.token or os.environ.get("EVOLOG_TOKEN")
    from evolog.worker import read_token, status_of

    root = store_path(args)
    status = status_of(root)
    if not status["running"]:
        raise ValueError(
            f"no worker is running for the store {root}: start one (`evolog worker start`) "
            "or give the URL of an `evolog serve` (--url)"
        )
    return status["url"] + "/ui", read_token(root)


def run_ui(args: argparse.Namespace) -> int:
    try:
        url, token = viewer_url(args)
    except (ValueError, OSError) as exc:
        print(f"evolog: error: {exc}", file=sys.stderr)
        return 2
    full = url + ("#token=" + urllib.parse.quote(token, safe="") if token else "")
    opened = False
    if not args.no_open:
        import webbrowser

        opened = webbrowser.open(full)
    out: dict[str, Any] = {
        "url": full if args.show_token or not token else url,
        "token": bool(token),
        "opened": opened,
    }
    print_json(out)
    return 0


__all__ = ["add_ui_commands", "run_ui", "viewer_url"]
