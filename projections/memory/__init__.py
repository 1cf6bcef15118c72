"""Memory items: notes, lessons, strategies and genes as one recallable model, folded from
events."""

from typing import TYPE_CHECKING

from evolog._lazy import lazy_exports

from ._config import CONFIG_FILE, MemoryConfig, config_from, load_config
from ._fold import FOLD_KINDS, FoldState, ItemFold, peek
from ._index import ItemIndex
from ._items import (
    BACKBONE,
    DEFAULT_BRANCH,
    GENE,
    GENE_BRANCH,
    LESSON,
    LESSON_BRANCH,
    NOTE,
    STRATEGY,
    STRATEGY_BRANCH,
    MemoryItem,
)

if TYPE_CHECKING:
    from ._plan import archive_notes, compression_note, write_note
    from ._steps import matched_steps, names_own_step, same_steps, step_words
    from ._text import idf, term_freqs
    from ._untrusted import error_signature, quoted, safe_text


__all__ = [
    "BACKBONE",
    "CONFIG_FILE",
    "DEFAULT_BRANCH",
    "FOLD_KINDS",
    "GENE",
    "GENE_BRANCH",
    "LESSON",
    "LESSON_BRANCH",
    "NOTE",
    "STRATEGY",
    "STRATEGY_BRANCH",
    "FoldState",
    "ItemFold",
    "ItemIndex",
    "MemoryConfig",
    "MemoryItem",
    "archive_notes",
    "compression_note",
    "config_from",
    "error_signature",
    "idf",
    "load_config",
    "matched_steps",
    "names_own_step",
    "peek",
    "quoted",
    "safe_text",
    "same_steps",
    "step_words",
    "term_freqs",
    "write_note",
]


__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._plan": "archive_notes compression_note write_note",
        "._untrusted": "error_signature quoted safe_text",
        "._text": "idf term_freqs",
        "._steps": "matched_steps names_own_step same_steps step_words",
    },
    globals(),
)
