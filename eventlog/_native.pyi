# The C extension (eventlog/_native.c): the seal converter (used through eventlog._bodies)
# and the id index's keys and slot inserts (used through eventlog._idindex).
from typing import Any

INDEX_SLOT_FORMAT: int

def make_plan(
    columns: list[tuple[str, int, tuple[str, ...]]],
    kinds: list[tuple[str, list[tuple[int, bool, bytes | None]]]],
    kind_col: int,
    /,
) -> object: ...
def convert(
    plan: object, bodies: list[bytes | memoryview], skip: int, count: int, /
) -> list[Any]: ...
def index_insert(
    table: object, header_size: int, mask: int, items: list[tuple[bytes | str, int]], /
) -> int: ...
def index_key(event_id: str, /) -> bytes: ...
