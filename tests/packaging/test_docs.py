"""The docs teach what the code does: README.md and every page under docs/.

Python blocks execute; the command-line and SQL walkthroughs run for real; the site builds
with MkDocs in strict mode (any warning fails); every link between pages and every repository
path a page names exists.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
README = REPO / "README.md"
DOCS = REPO / "docs"
PAGES = [README, *sorted(DOCS.rglob("*.md"))]


def _blocks(lang: str, pages: list[Path] = PAGES) -> list[tuple[Path, str]]:
    return [
        (page, block)
        for page in pages
        for block in re.findall(rf"```{lang}\n(.*?)```", page.read_text(), flags=re.S)
    ]


def _sh_block(page: str, containing: str) -> str:
    return next(b for _, b in _blocks("sh", [DOCS / page]) if containing in b)


@pytest.mark.parametrize(
    ("page", "block"),
    _blocks("python"),
    ids=lambda v: v.relative_to(REPO).as_posix() if isinstance(v, Path) else "",
)
def test_python_blocks_run(
    page: Path, block: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(block, str(page), "exec"), {})


def _run_walkthrough(script: str, store: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A page's shell block under bash -euo pipefail, with this environment's `evolog` first
    on PATH and ``store`` as EVOLOG_STORE."""
    env = dict(os.environ, EVOLOG_STORE=str(store))
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env["PATH"]
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )


def _replay(store: Path) -> str:
    return subprocess.run(
        [sys.executable, "-m", "evolog", "--store", str(store), "replay"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_cli_walkthrough_runs(tmp_path: Path) -> None:
    """Every `evolog ...` line of the command-line page, in order, against a temp store."""
    block = _sh_block("cli.md", "evolog init")
    script = block.replace("/tmp/mem", str(tmp_path / "mem")).replace(
        "/tmp/copy", str(tmp_path / "copy")
    )
    result = _run_walkthrough(script, tmp_path / "mem", tmp_path)
    assert result.returncode == 0, result.stderr
    # same ids, same seqs: the target was empty
    assert _replay(tmp_path / "copy") == _replay(tmp_path / "mem")


def test_sql_examples_run_on_the_demo_store(tmp_path: Path) -> None:
    """The SQL page's analytics queries, against a store the demo filled."""
    block = _sh_block("sql.md", "evolog sql")
    subprocess.run(
        [sys.executable, "-m", "evolog", "demo", "--cycles", "40", "--dir", "store"],
        cwd=tmp_path,
        capture_output=True,
        check=True,
    )
    result = _run_walkthrough(block, tmp_path / "store", tmp_path)
    assert result.returncode == 0, result.stderr
    assert "gene_" in result.stdout
    assert (tmp_path / "export").is_dir()


def test_readme_is_a_front_door() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; the manual belongs in docs/"


def test_site_builds_without_a_warning(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("WARNING")]
    assert warnings == []
    home = (tmp_path / "index.html").read_text()
    assert "The loop in one example" in home  # README.md is the site's home page


_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)\s]*)?\)")
_ROOTS = "tests|bench|eventlog|projections|advice|dream|evolog|plugin"
_REPO_PATH = re.compile(rf"`((?:{_ROOTS})/[\w./-]+)`")


def _page_exists(target: Path) -> bool:
    # docs/index.md is README.md, generated into the site by docs/_hooks.py.
    return target.exists() or target.resolve() == DOCS / "index.md"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_links_and_named_paths_exist(page: Path) -> None:
    """A relative link resolves, and a repository path written as code names a real file or
    folder (a test moved or renamed must be followed by the pages that cite it)."""
    text = page.read_text()
    missing = [
        target
        for target in _LINK.findall(text)
        if "://" not in target and not _page_exists(page.parent / target)
    ]
    for path in _REPO_PATH.findall(text):
        if any(ch in path for ch in "*<{") or path.endswith("/..."):
            continue  # a pattern, not a path
        if not (REPO / path.rstrip("/")).exists():
            missing.append(path)
    assert missing == [], f"{page.relative_to(REPO)} names paths that do not exist: {missing}"
