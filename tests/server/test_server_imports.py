"""The server's dependencies stay off the paths that must be lean."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("starlette", "uvicorn", "mcp", "anyio", "httpx", "pydantic")


def _loaded(code: str) -> list[str]:
    probe = f"{code}\nimport sys\nprint(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_import_evolog_and_the_hook_do_not_load_the_server() -> None:
    assert _loaded("import evolog; evolog.Memory") == []
    assert _loaded("import evolog.hook") == []
    # The package's own names (config, errors) load without Starlette, for `serve --help`.
    assert _loaded("import evolog.server; evolog.server.ServerConfig") == []


def test_serve_and_mcp_document_their_flags() -> None:
    for command in ("serve", "mcp"):
        out = subprocess.run(
            [sys.executable, "-m", "evolog", command, "--help"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        assert "--durability" in out.stdout and "example:" in out.stdout
