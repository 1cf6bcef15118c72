"""The structure the package promises: one installed namespace, layers that only import
downwards, no import cycles, small folders, and lazy exports that agree with ``__all__``."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest
from _imports import (
    EXTENSIONS,
    LAYERS,
    ROOT,
    cycles,
    import_graph,
    imports_of,
    library_files,
)

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
    names = set(files) | EXTENSIONS
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


def _part_of(module: str, packages: set[str]) -> str:
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in LAYERS:
        return ".".join(parts[:2])
    if len(parts) > 1 and not parts[1].startswith("_") and f"evolog.{parts[1]}" in packages:
        return ".".join(parts[:2])
    return "evolog"


def _public_names(path: Path) -> set[str] | None:
    """A module's ``__all__`` as written, or None where it has none."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                value = node.value
                if isinstance(value, ast.List | ast.Tuple):
                    return {e.value for e in value.elts if isinstance(e, ast.Constant)}
    return None


def private_reaches() -> list[str]:
    """Every import of one part that reaches into another part's private side."""
    files = library_files()
    modules = set(files) | EXTENSIONS
    packages = {name for name, path in files.items() if path.name == "__init__.py"}
    found = []
    for name, path in files.items():
        part = _part_of(name, packages)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text())):
            wanted: list[tuple[str, str | None]] = []  # (module, name taken from it)
            if isinstance(node, ast.Import):
                wanted = [(a.name, None) for a in node.names if a.name in modules]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join([*base, node.module] if node.module else base)
                else:
                    target = node.module or ""
                if target not in modules:
                    continue
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    wanted.append((sub, None) if sub in modules else (target, alias.name))
            for target, taken in wanted:
                owner = _part_of(target, packages)
                if owner == part or target == "evolog._lazy":
                    continue
                inside = target.split(".")[len(owner.split(".")) :]
                hidden = any(p.startswith("_") for p in inside)
                if not hidden and taken is not None and target in packages:
                    public = _public_names(files[target])
                    hidden = taken not in public if public is not None else taken[0] == "_"
                elif not hidden and taken is not None:
                    hidden = taken.startswith("_")
                if hidden:
                    shown = f"{target}.{taken}" if taken else target
                    nearest = target.split(".")[: len(owner.split("."))]
                    for piece in inside:
                        if piece.startswith("_"):
                            break
                        nearest.append(piece)
                    use = ".".join(nearest) + (f".{taken}" if taken else "'s public names")
                    found.append(f"{name}: imports {shown} (use {use})")
    return sorted(set(found))


def test_no_part_imports_another_parts_private_modules() -> None:
    """Parts meet only at each other's public names.

    A *part* is one of the four layers (``evolog.eventlog``, ``evolog.projections``,
    ``evolog.dream``, ``evolog.advice``), each public subpackage of ``evolog`` itself
    (``evolog.cli``, ``evolog.hook``, ``evolog.server``, ``evolog.mcp``, ``evolog.iceberg``,
    ``evolog.survive``, ``evolog.worker``, ``evolog.doctor`` and any added later), and the
    facade: ``evolog``'s own ``__init__`` and its private top-level modules (``_memory``,
    ``_recall``, ...). A subpackage inside a part (``projections.graph``, ``advice.recall``)
    belongs to that part: the part's modules may share its private modules freely, and
    another part may not reach them, even through a public subpackage
    (``evolog.eventlog.schema._signalkey`` from advice is a private reach).

    Another part may import what is public: a name in a package's ``__all__`` (a public
    subpackage's too), a public module's names that do not start with ``_``. The one
    exception is ``evolog._lazy``, the namespace's own lazy-export machinery that every
    package's ``__init__`` uses. Tests and benchmarks may reach anywhere.
    """
    assert private_reaches() == []
