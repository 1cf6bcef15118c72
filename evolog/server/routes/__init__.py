"""The native API's routes (``/v1``), ``/healthz``, ``/metrics`` and ``/openapi.json``."""

from typing import TYPE_CHECKING

from evolog._lazy import lazy_exports

if TYPE_CHECKING:
    from ._dream import run_dream
    from ._memory import fetch_json, recall_json, recalled_items, remember_json
    from ._query import advise_json, route_json, sql_result
    from ._search import search_events


__all__ = [
    "advise_json",
    "fetch_json",
    "recall_json",
    "recalled_items",
    "remember_json",
    "route_json",
    "run_dream",
    "search_events",
    "sql_result",
]


__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._query": "advise_json route_json sql_result",
        "._memory": "fetch_json recall_json recalled_items remember_json",
        "._dream": "run_dream",
        "._search": "search_events",
    },
    globals(),
)
