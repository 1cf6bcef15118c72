"""evolver's remote memory graph (``/kg/advice``, ``/kg/ingest``)."""
