# The C seal converter (eventlog/_native.c); used through eventlog._bodies only.
from typing import Any

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
    table: object, header_size: int, mask: int, items: list[tuple[bytes, int]], /
) -> int: ...
