"""Routes compatible with evolving-memory's REST server (``/cte``): docs/reference/cte-rest.md."""
