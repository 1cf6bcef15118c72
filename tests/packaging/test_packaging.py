"""The wheel as a user installs it: built from this checkout, installed (not editable) into a
fresh virtual environment, and used from a folder outside the checkout.

The editable install of the development environment hides what the wheel lacks (it serves
every module from the source folders), so this is the one test that sees what ``pip install
evolog`` gets: every package importable, and the demo, ``recall``, the hook and ``evolog mcp``
working. The dependencies are not reinstalled: the fresh environment sees the development
environment's site-packages through a ``.pth`` line, which adds the folder to ``sys.path``
without running the ``.pth`` files inside it, so the editable finder never loads.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
#: What the wheel is built from, besides the package folders (pyproject's package-dir).
_TOP_FILES = ("pyproject.toml", "setup.py", "README.md", "LICENSE")


def _package_dir() -> dict[str, str]:
    with open(REPO / "pyproject.toml", "rb") as f:
        mapping: dict[str, str] = tomllib.load(f)["tool"]["setuptools"]["package-dir"]
    return mapping


def _source_packages(src: Path) -> list[str]:
    """Every folder with an ``__init__.py`` under the roots of the copy the wheel was built
    from, by installed name (found here independently of setup.py, so a mistake there
    cannot hide itself)."""
    names = []
    for name, folder in _package_dir().items():
        for init in sorted((src / folder).rglob("__init__.py")):
            rel = init.parent.relative_to(src / folder).parts
            names.append(".".join((name, *rel)))
    return sorted(names)


def _run(cmd: list[str], cwd: Path, env: dict[str, str], stdin: str | None = None) -> str:
    done = subprocess.run(
        cmd, cwd=cwd, env=env, input=stdin, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"{cmd} exited {done.returncode}: {done.stderr[-2000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A wheel built from a copy of the checkout, installed into a fresh venv."""
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    src.mkdir()
    # A copy, so the build leaves no build/ folder or compiled extension in the checkout.
    skip = shutil.ignore_patterns("__pycache__", "*.so", "*.egg-info", "build")
    for name in _TOP_FILES:
        shutil.copy2(REPO / name, src / name)
    for folder in _package_dir().values():
        shutil.copytree(REPO / folder, src / folder, ignore=skip)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVOLOG_", "PYTHON"))}
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    _run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(base), str(src)], base, env)
    (wheel,) = base.glob("evolog-*.whl")
    venv = base / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], base, env)
    python = venv / "bin" / "python"
    _run(
        [*pip, "--python", str(python), "install", "--no-deps", "--no-index", str(wheel)], base, env
    )
    site = Path(
        _run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], base, env
        ).strip()
    )
    (site / "_evolog_test_deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    work = base / "elsewhere"
    work.mkdir()
    env["HOME"] = str(base / "home")  # nothing of the user's ~/.evolog or ~/.claude
    return {"src": src, "wheel": wheel, "venv": venv, "python": python, "cwd": work, "env": env}


def test_the_wheel_holds_every_package(installed: dict[str, Any]) -> None:
    with zipfile.ZipFile(installed["wheel"]) as z:
        inits = {
            n[: -len("/__init__.py")].replace("/", ".")
            for n in z.namelist()
            if n.endswith("/__init__.py")
        }
    assert inits == set(_source_packages(installed["src"]))


def test_every_package_imports_from_the_installed_wheel(installed: dict[str, Any]) -> None:
    names = _source_packages(installed["src"])
    code = (
        "import importlib, json, sys\n"
        "mods = {n: importlib.import_module(n).__file__ for n in sys.argv[1:]}\n"
        "finders = [type(f).__module__ for f in sys.meta_path]\n"
        "print(json.dumps({'mods': mods, 'finders': finders}))\n"
    )
    out = json.loads(
        _run([str(installed["python"]), "-c", code, *names], installed["cwd"], installed["env"])
    )
    venv = str(installed["venv"])
    assert sorted(out["mods"]) == names
    wrong = {n: f for n, f in out["mods"].items() if not f.startswith(venv)}
    assert not wrong, f"served from outside the installed wheel: {wrong}"
    assert not any("editable" in f for f in out["finders"]), out["finders"]


def test_demo_recall_and_hook_from_the_installed_wheel(installed: dict[str, Any]) -> None:
    evolog = str(installed["venv"] / "bin" / "evolog")
    cwd, env = installed["cwd"], installed["env"]
    out = _run([evolog, "demo", "--cycles", "40"], cwd, env)
    assert "40 simulated agent cycles" in out
    store = str(cwd / "evolog-demo")
    lesson = "Deploy the web service with the blue green script."
    _run([evolog, "--store", store, "remember", "deploy", lesson], cwd, env)
    recalled = _run([evolog, "--store", store, "recall", "deploy the web service"], cwd, env)
    assert "blue green" in recalled
    payload = {
        "hook_event_name": "UserPromptSubmit",
        "session_id": "pkg",
        "prompt": "deploy the web service",
        "cwd": str(cwd),
    }
    out = _run([evolog, "--store", store, "hook", "claude-code"], cwd, env, json.dumps(payload))
    assert "blue green" in out  # the recalled lesson, injected
    assert not (cwd / "evolog-demo" / "dead-letter.ndjson").exists()
    replayed = _run([evolog, "--store", store, "replay", "--kinds", "attempt"], cwd, env)
    assert any(
        json.loads(line).get("task") == "deploy the web service" for line in replayed.splitlines()
    )


def test_mcp_from_the_installed_wheel(installed: dict[str, Any]) -> None:
    from mcp import Client  # the development extra holds the server extra
    from mcp.client.stdio import StdioServerParameters

    store = installed["cwd"] / "mcp-store"
    params = StdioServerParameters(
        command=str(installed["venv"] / "bin" / "evolog"),
        args=["--store", str(store), "mcp"],
        env=installed["env"],
        cwd=installed["cwd"],
    )

    async def session() -> tuple[set[str], Any, Any]:
        async with Client(params) as c:
            tools = {t.name for t in (await c.list_tools()).tools}
            lesson = {"branch": "deploy", "text": "run the blue-green script, then check /health"}
            kept = await c.call_tool("remember", lesson)
            found = await c.call_tool("recall", {"query": "deploy with the blue-green script"})
            return tools, kept, found

    tools, kept, found = asyncio.run(session())
    assert {"recall", "remember", "record_outcome"} <= tools
    assert not kept.is_error and not found.is_error
    assert "blue-green" in found.content[0].text  # type: ignore[union-attr]


def test_the_viewer_ships_its_script_and_style(installed: dict[str, Any]) -> None:
    with zipfile.ZipFile(installed["wheel"]) as z:
        names = set(z.namelist())
    assert {"evolog/ui/static/ui.js", "evolog/ui/static/ui.css"} <= names
    code = (
        "from evolog.ui._page import shell, static_file\n"
        "print(len(static_file('ui.js')) > 1000, len(static_file('ui.css')) > 100,"
        " '/ui/static/ui.js' in shell())\n"
    )
    out = _run([str(installed["python"]), "-c", code], installed["cwd"], installed["env"])
    assert out.split() == ["True", "True", "True"]
