"""What an event is: the tagged msgspec Structs, their validation rules, signal keys, ids, the
JSON reader and the binary codec. Imports nothing from the rest of the log.

What other parts of evolog import from here.
"""

from typing import TYPE_CHECKING

from evolog._lazy import lazy_exports

if TYPE_CHECKING:
    from ._codec import gc_paused
    from ._signalkey import (
        compute_signal_key,
        extract_error_signature,
        has_error_signal,
        jaccard,
        jaccard_sets,
        js_pow,
        js_string,
        js_trim,
        js_truthy,
        normalize_error_signature,
        normalize_signals_for_matching,
        parse_iso_ms,
        stable_hash,
        to_fixed,
    )


__all__ = [
    "compute_signal_key",
    "extract_error_signature",
    "gc_paused",
    "has_error_signal",
    "jaccard",
    "jaccard_sets",
    "js_pow",
    "js_string",
    "js_trim",
    "js_truthy",
    "normalize_error_signature",
    "normalize_signals_for_matching",
    "parse_iso_ms",
    "stable_hash",
    "to_fixed",
]


__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._signalkey": "compute_signal_key extract_error_signature has_error_signal jaccard "
        "jaccard_sets js_pow js_string js_trim js_truthy "
        "normalize_error_signature normalize_signals_for_matching parse_iso_ms "
        "stable_hash to_fixed",
        "._codec": "gc_paused",
    },
    globals(),
)
