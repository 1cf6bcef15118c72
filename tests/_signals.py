"""For tests that interrupt a child with SIGINT: a suite started as a background job
(`cmd &`, as CI scripts and `nohup` do) passes SIGINT down ignored, and Python keeps an
ignored SIGINT ignored, so such a child would never see the interrupt. ``preexec_fn``."""

from __future__ import annotations

import signal


def default_sigint() -> None:
    """In the child before exec: SIGINT back to the default disposition."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
