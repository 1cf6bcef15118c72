"""eventlog: the durable, append-only event log that is evolog's only source of truth.

Events are frozen msgspec Structs in one tagged union (tag ``kind``). Appends go to a
checksummed write-ahead log under a cross-process lock that assigns gap-free seqs; sealing
moves them into zstd Parquet segments committed by an atomic manifest update.

Errors (all in this package derive from :class:`EventLogError`)::

    EventLogError
    ├── InvalidEventError
    │   └── EventTooLargeError
    ├── StoreNotFoundError
    ├── StoreExistsError
    ├── CorruptLogError
    ├── StorageError
    ├── LockTimeoutError
    └── ClosedError
"""

from typing import TYPE_CHECKING

from evolog._lazy import lazy_exports

from ._errors import (
    ClosedError,
    CorruptLogError,
    EventLogError,
    EventTooLargeError,
    InvalidEventError,
    LockTimeoutError,
    StorageError,
    StoreExistsError,
    StoreNotFoundError,
)
from ._snapshot import Snapshot, TailRecords
from ._store import Paths, init_store, require_store
from .schema._codec import MAX_EVENT_BYTES, kind_of, now_us, to_json
from .schema._dream_events import (
    ChildStep,
    Constraint,
    DreamBegin,
    DreamEnd,
    Lifecycle,
    Link,
    Mark,
    Merge,
    Node,
    Prune,
    Retraction,
)
from .schema._events import (
    SCHEMA_VERSION,
    Attempt,
    ConfidenceEdge,
    ConfidenceGeneOutcome,
    Event,
    ExternalCandidate,
    Feedback,
    Fetched,
    Hypothesis,
    Mutation,
    Note,
    Outcome,
    Personality,
    Recall,
    Signal,
    Step,
    Tick,
)
from .schema._ids import new_id
from .schema._rules import STATUSES, TS_MAX
from .schema._union import EVENT_TYPES, KINDS, AnyEvent

if TYPE_CHECKING:
    from ._checked import (
        HEADER_SIZE,
        checked_body,
        file_crc,
        header,
        note_damage,
        read_checked,
        with_header,
        write_checked,
        write_parts,
    )
    from ._files import FileLock, os_errors_as_storage, temp_beside
    from ._log import SEAL_THRESHOLD_BYTES, AutoSeal, EventLog, open_log
    from ._verify import VerifyReport
    from .schema._jsonin import from_builtins, from_json, parse_ts
    from .wal._receipt import Durability, Receipt

# The writer and the JSON reader load on first use: a process that only reads the log (a
# cold `evolog sql`) does not pay for the append machinery, and a hook that appends does
# not pay for the JSON reader unless it parses JSON.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "._log": "EventLog open_log AutoSeal SEAL_THRESHOLD_BYTES",
        ".wal._receipt": "Durability Receipt",
        ".schema._jsonin": "from_builtins from_json parse_ts",
        "._files": "FileLock os_errors_as_storage temp_beside",
        "._checked": "HEADER_SIZE checked_body file_crc header note_damage read_checked "
        "with_header write_checked write_parts",
        "._verify": "VerifyReport",
    },
    globals(),
)

__all__ = [
    "EVENT_TYPES",
    "HEADER_SIZE",
    "KINDS",
    "MAX_EVENT_BYTES",
    "SCHEMA_VERSION",
    "SEAL_THRESHOLD_BYTES",
    "STATUSES",
    "TS_MAX",
    "AnyEvent",
    "Attempt",
    "AutoSeal",
    "ChildStep",
    "ClosedError",
    "ConfidenceEdge",
    "ConfidenceGeneOutcome",
    "Constraint",
    "CorruptLogError",
    "DreamBegin",
    "DreamEnd",
    "Durability",
    "Event",
    "EventLog",
    "EventLogError",
    "EventTooLargeError",
    "ExternalCandidate",
    "Feedback",
    "Fetched",
    "FileLock",
    "Hypothesis",
    "InvalidEventError",
    "Lifecycle",
    "Link",
    "LockTimeoutError",
    "Mark",
    "Merge",
    "Mutation",
    "Node",
    "Note",
    "Outcome",
    "Paths",
    "Personality",
    "Prune",
    "Recall",
    "Receipt",
    "Retraction",
    "Signal",
    "Snapshot",
    "Step",
    "StorageError",
    "StoreExistsError",
    "StoreNotFoundError",
    "TailRecords",
    "Tick",
    "VerifyReport",
    "checked_body",
    "file_crc",
    "from_builtins",
    "from_json",
    "header",
    "init_store",
    "kind_of",
    "new_id",
    "note_damage",
    "now_us",
    "open_log",
    "os_errors_as_storage",
    "parse_ts",
    "read_checked",
    "require_store",
    "temp_beside",
    "to_json",
    "with_header",
    "write_checked",
    "write_parts",
]
