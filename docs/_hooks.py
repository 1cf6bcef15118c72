"""MkDocs hook: the site's home page is the repository's README.md.

The README is the front door on a code host, where its links point into docs/; on the site
those pages sit at the root, and files outside docs/ (bench/RESULTS.md, LICENSE) are not
pages, so their links become plain paths.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

_README = Path(__file__).resolve().parents[1] / "README.md"
_LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")


def _site_link(match: re.Match[str]) -> str:
    target, anchor = match.group(1), match.group(2) or ""
    if "://" in target:
        return match.group(0)
    if target.startswith("docs/"):
        return f"]({target.removeprefix('docs/')}{anchor})"
    return match.group(0)


def home_markdown() -> str:
    text = _README.read_text(encoding="utf-8")
    text = _LINK.sub(_site_link, text)
    # Links to repository files that are not pages: show the path, not a dead link.
    return re.sub(r"\[([^\]]+)\]\(((?:bench|tests|plugin)/[^)]*|LICENSE)\)", r"`\2`", text)


def on_files(files: Files, config: Any) -> Files:
    files.append(File.generated(config, "index.md", content=home_markdown()))
    return files
