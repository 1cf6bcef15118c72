"""Memory items: notes, strategies and genes as one recallable model, folded from events."""

from ._config import CONFIG_FILE, MemoryConfig, config_from, load_config
from ._fold import FOLD_KINDS, FoldState, ItemFold
from ._index import ItemIndex
from ._items import (
    BACKBONE,
    DEFAULT_BRANCH,
    GENE,
    GENE_BRANCH,
    NOTE,
    STRATEGY,
    STRATEGY_BRANCH,
    MemoryItem,
)

__all__ = [
    "BACKBONE",
    "CONFIG_FILE",
    "DEFAULT_BRANCH",
    "FOLD_KINDS",
    "GENE",
    "GENE_BRANCH",
    "NOTE",
    "STRATEGY",
    "STRATEGY_BRANCH",
    "FoldState",
    "ItemFold",
    "ItemIndex",
    "MemoryConfig",
    "MemoryItem",
    "config_from",
    "load_config",
]
