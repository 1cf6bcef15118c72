"""Routes compatible with the evolving-memory reference's REST server (``/cte``)."""
