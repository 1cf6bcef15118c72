"""The import graph of the installed ``evolog`` package, read from the source with ast.

Shared by the architecture tests. Module names are the installed ones: the repository's
top-level folders ``eventlog``, ``projections``, ``dream`` and ``advice`` are
``evolog.<folder>``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("eventlog", "projections", "dream", "advice")


def library_files() -> dict[str, Path]:
    """Installed module name -> source file, for every module of the library."""
    found: dict[str, Path] = {}
    for folder, prefix in [("evolog", "evolog"), *((f, f"evolog.{f}") for f in LAYERS)]:
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([prefix, *parts])] = path
    return found


#: The C extensions: modules with no Python source (built from eventlog/_native.c and
#: projections/graph/_kernels.c).
EXTENSIONS = frozenset({"evolog.eventlog._native", "evolog.projections.graph._kernels"})


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in {
            "TYPE_CHECKING",
            "typing.TYPE_CHECKING",
        }:
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def _resolve(level: int, module: str | None, package: str) -> str:
    if not level:
        return module or ""
    base = package.split(".")
    base = base[: len(base) - level + 1]
    return ".".join([*base, module] if module else base)


def _providers(package: str, path: Path) -> dict[str, str]:
    """Name -> the module a package's ``__init__`` takes it from (its lazy exports are
    listed in its ``if TYPE_CHECKING`` block, its eager ones imported outright)."""
    found: dict[str, str] = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            source = _resolve(node.level, node.module, package)
            found.update((a.asname or a.name, source) for a in node.names)
    return found


_PROVIDERS: dict[str, dict[str, str]] = {}
_FILES: dict[str, Path] = {}


def _provider(target: str, name: str, modules: set[str], depth: int = 0) -> str:
    """The module that defines what ``from target import name`` takes: a package's public
    name stands for the module that provides it, so importing one name of a package does
    not count as importing every module behind the package's other names."""
    if not _FILES:
        _FILES.update(library_files())
    path = _FILES.get(target)
    if depth > 8 or path is None or path.name != "__init__.py":
        return target
    if target not in _PROVIDERS:
        _PROVIDERS[target] = _providers(target, path)
    source = _PROVIDERS[target].get(name)
    if source is None or source not in modules or source == target:
        return target
    return _provider(source, name, modules, depth + 1)


def imports_of(
    name: str, path: Path, modules: set[str], *, type_checking: bool = False
) -> set[str]:
    """The library modules ``name`` imports, imports inside functions included; those of
    ``if TYPE_CHECKING`` blocks only with ``type_checking``."""
    tree = ast.parse(path.read_text())
    skip = set() if type_checking else _type_checking_lines(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(node.level, node.module, package)
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in modules:
                    found.add(sub)
                elif target in modules:
                    found.add(_provider(target, alias.name, modules))
    found.discard(name)
    return found


def import_graph() -> dict[str, set[str]]:
    files = library_files()
    names = set(files) | EXTENSIONS
    return {name: imports_of(name, path, names) for name, path in files.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found
