"""The structure the package promises: one installed namespace, layers that only import
downwards, no import cycles, small folders, and lazy exports that agree with ``__all__``."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest
from _imports import LAYERS, ROOT, cycles, import_graph, imports_of, library_files

#: What each layer may import from the library (besides itself and evolog._lazy).
ALLOWED = {
    "evolog.eventlog": set(),
    "evolog.projections": {"evolog.eventlog"},
    "evolog.advice": {"evolog.eventlog", "evolog.projections"},
    "evolog.dream": {"evolog.eventlog", "evolog.projections"},
}
LAZY_PACKAGES = ["evolog", "evolog.eventlog", "evolog.projections", "evolog.advice"]


def _layer(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 and parts[1] in LAYERS else "evolog"


def test_no_import_cycles_even_for_type_checking() -> None:
    files = library_files()
    names = set(files) | {"evolog.eventlog._native"}
    graph = {n: imports_of(n, p, names, type_checking=True) for n, p in files.items()}
    assert cycles(graph) == []
    assert cycles(import_graph()) == []


def test_layers_import_only_downwards() -> None:
    wrong = []
    for module, targets in import_graph().items():
        layer = _layer(module)
        if layer == "evolog":
            continue
        for target in targets:
            if target == "evolog._lazy" or _layer(target) in {layer, *ALLOWED[layer]}:
                continue
            wrong.append(f"{module} -> {target}")
    assert wrong == []


def test_no_folder_holds_more_than_15_modules() -> None:
    folders: dict[Path, int] = {}
    for path in library_files().values():
        folders[path.parent] = folders.get(path.parent, 0) + 1
    assert {str(f.relative_to(ROOT)): n for f, n in folders.items() if n > 15} == {}


def _type_checking_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for child in ast.walk(node):
                if isinstance(child, ast.ImportFrom):
                    names.update(a.asname or a.name for a in child.names)
    return names


@pytest.mark.parametrize("package", LAZY_PACKAGES)
def test_lazy_exports_agree_with_all_and_type_checking(package: str) -> None:
    module = importlib.import_module(package)
    lazy = module.__getattr__.lazy_names
    assert module.__all__ == sorted(module.__all__, key=lambda n: (not n.isupper(), n))
    eager = {n for n in module.__all__ if n in vars(module) and n not in lazy}
    assert set(module.__all__) == eager | lazy
    assert lazy <= _type_checking_names(library_files()[package])
    for name in sorted(lazy):
        assert getattr(module, name) is not None
    assert set(module.__all__) <= set(dir(module))


def test_installed_namespace_leaves_no_top_level_packages(tmp_path: Path) -> None:
    code = (
        "import importlib.util, sys, evolog, evolog.eventlog, evolog.projections, "
        "evolog.advice, evolog.dream\n"
        "print([n for n in ('eventlog', 'projections', 'advice', 'dream')"
        " if importlib.util.find_spec(n) is not None])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


def test_tests_and_benchmarks_import_the_installed_names() -> None:
    """``import eventlog`` would load a second copy of the package from the checkout."""
    wrong = []
    for folder in ("tests", "bench"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                elif isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                else:
                    continue
                wrong += [f"{path.name}:{node.lineno}" for n in names if n.split(".")[0] in LAYERS]
    assert wrong == []


def test_no_subpackage_shadows_a_public_name() -> None:
    """Importing ``evolog.projections.ledger`` (a folder) would replace the function
    ``evolog.projections.ledger`` on its package: a subpackage never takes a public name."""
    clashes = []
    for package in ["evolog", *(f"evolog.{layer}" for layer in LAYERS)]:
        public = set(importlib.import_module(package).__all__)
        subpackages = {
            name.rsplit(".", 1)[1]
            for name, path in library_files().items()
            if path.name == "__init__.py" and name.rpartition(".")[0] == package
        }
        clashes += [f"{package}.{name}" for name in sorted(public & subpackages)]
    assert clashes == []
