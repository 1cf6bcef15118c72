"""The package list, discovered rather than written down.

The repository's top-level folders install inside the one ``evolog`` namespace (see
``[tool.setuptools.package-dir]`` in pyproject.toml), which setuptools' own ``find``
cannot express: it would name ``eventlog.wal`` where the wheel needs ``evolog.eventlog.wal``.
A hand-kept list drifted (three packages were missing from the wheel while the editable
install hid it), so every folder holding an ``__init__.py`` under a mapped root is a package.
``tests/packaging/test_packaging.py`` builds the wheel and imports every package from it.
"""

from __future__ import annotations

import os
import tomllib

from setuptools import setup


def roots(base: str = ".") -> dict[str, str]:
    """Installed name -> source folder: pyproject.toml's package-dir, read, not repeated."""
    with open(os.path.join(base, "pyproject.toml"), "rb") as f:
        mapping: dict[str, str] = tomllib.load(f)["tool"]["setuptools"]["package-dir"]
    return mapping


def discover(base: str = ".") -> list[str]:
    """Every package under the roots, by its installed name."""
    found: set[str] = set()
    for name, folder in roots(base).items():
        top = os.path.join(base, folder)
        for here, dirs, files in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d.isidentifier())
            if "__init__.py" not in files:
                dirs[:] = []  # a folder that is not a package holds none we ship
                continue
            rel = os.path.relpath(here, top)
            found.add(name if rel == "." else f"{name}.{rel.replace(os.sep, '.')}")
    return sorted(found)


if __name__ == "__main__":
    setup(packages=discover())
