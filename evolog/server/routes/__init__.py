"""The native API's routes (``/v1``), ``/healthz``, ``/metrics`` and ``/openapi.json``."""
