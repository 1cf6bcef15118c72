"""Pausing capture: per session or per project, read by every hook call.

``<store>/hooks/paused.json`` holds ``{"sessions": [...], "projects": [...]}``: a session id
paused, or a project directory whose sessions (the payload's ``cwd`` in it or below it) are
paused. While paused the hook records nothing and injects nothing; an attempt it held open
is closed ``unknown`` (no credit). The file is a control, not history: ``evolog pause`` and
``evolog resume`` write it whole (a temporary file renamed over it), so a hook reads either
the old list or the new one.
"""

from __future__ import annotations

import contextlib
import os
from typing import Final

import msgspec

from evolog.eventlog import temp_beside

__all__ = ["PAUSE_FILE", "Paused", "load_paused", "pause_path", "paused", "save_paused"]

PAUSE_FILE: Final = "paused.json"
_MAX_BYTES: Final = 1 << 20


class Paused(msgspec.Struct):
    sessions: list[str] = []
    projects: list[str] = []


def pause_path(root: str) -> str:
    return os.path.join(root, "hooks", PAUSE_FILE)


def load_paused(root: str) -> Paused:
    """The paused sessions and projects (none when the file is missing or unreadable)."""
    try:
        with open(pause_path(root), "rb") as f:
            data = f.read(_MAX_BYTES)
    except FileNotFoundError:
        return Paused()
    try:
        return msgspec.json.decode(data, type=Paused)
    except msgspec.MsgspecError as exc:
        raise ValueError(f"{pause_path(root)}: expected the pause list as JSON; {exc}") from None


def paused(root: str, session: str, cwd: str) -> bool:
    """Whether capture is paused for this session (or for the project it runs in)."""
    try:
        state = load_paused(root)
    except (OSError, ValueError):
        return False  # an unreadable control never stops recording silently
    if session in state.sessions:
        return True
    if not cwd:
        return False
    here = os.path.normpath(cwd)
    return any(here == p or here.startswith(p.rstrip(os.sep) + os.sep) for p in state.projects)


def save_paused(root: str, state: Paused) -> None:
    path = pause_path(root)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = temp_beside(path)
    try:
        with open(tmp, "wb") as f:
            f.write(msgspec.json.encode(state))
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
