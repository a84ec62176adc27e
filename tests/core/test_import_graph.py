"""The ``cupel`` package imports without cycles: every ``import`` / ``from ... import``
in its source (module level, inside functions and under ``TYPE_CHECKING`` alike) is an
edge, read with :mod:`ast`, and the graph has no strongly connected component larger
than one module."""

from __future__ import annotations

import ast
from pathlib import Path

import cupel

PACKAGE_DIR = Path(cupel.__file__).parent


def module_files(package_dir: Path) -> dict[str, Path]:
    """Dotted module name → file, for every ``.py`` file below ``package_dir``."""
    base = package_dir.parent
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(base).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _owner(name: str, modules: dict[str, Path]) -> str | None:
    """The module of ``modules`` that ``name`` (a module or a name in one) lives in."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    source = node.module or ""
    if node.level:  # relative: from the module's package, up ``level - 1`` packages
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        source = ".".join([*package, *([node.module] if node.module else [])])
    # ``from pkg import sub`` imports the submodule ``pkg.sub`` when there is one.
    return [source, *(f"{source}.{alias.name}" for alias in node.names)]


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module → the modules of ``modules`` it imports anywhere in its source."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            targets = _imported(node, name, path.name == "__init__.py")
            if isinstance(node, ast.ImportFrom):
                submodules = [t for t in targets[1:] if t in modules]
                targets = submodules or targets[:1]
            for target in targets:
                owner = _owner(target, modules)
                if owner is not None and owner != name:
                    graph[name].add(owner)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_cupel_has_no_import_cycles() -> None:
    graph = import_graph(module_files(PACKAGE_DIR))
    assert len(graph) > 50  # the whole package was read
    assert cycles(graph) == []


def with_package_inits(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """``graph`` plus the edges Python adds: importing ``cupel.a.b`` first runs the
    ``__init__`` of ``cupel.a`` (the root ``cupel``, which re-exports everything, aside)."""
    extended = {name: set(targets) for name, targets in graph.items()}
    for name, targets in graph.items():
        for target in targets:
            parts = target.split(".")
            for cut in range(2, len(parts)):
                package = ".".join(parts[:cut])
                if package in graph and package != name and not name.startswith(package + "."):
                    extended[name].add(package)
    return extended


def test_no_cycle_through_a_package_init() -> None:
    graph = with_package_inits(import_graph(module_files(PACKAGE_DIR)))
    assert "cupel.policy" in graph["cupel.presets"]  # the package edge is there
    assert cycles(graph) == []


def test_a_cycle_through_a_package_init_is_found() -> None:
    graph = {
        "cupel.presets": {"cupel.policy._policy"},
        "cupel.policy": {"cupel.policy._resolve"},
        "cupel.policy._policy": set(),
        "cupel.policy._resolve": {"cupel.presets"},
    }
    assert cycles(graph) == []
    assert cycles(with_package_inits(graph)) == [
        ["cupel.policy", "cupel.policy._resolve", "cupel.presets"]
    ]


def test_the_pipeline_never_imports_the_policy_layer() -> None:
    graph = import_graph(module_files(PACKAGE_DIR))
    pipeline = [name for name in graph if name.startswith("cupel._pipeline")]
    assert pipeline and all(
        not target.startswith(("cupel.policy", "cupel.presets"))
        for name in pipeline
        for target in graph[name]
    )
    assert "cupel._pipeline" in graph["cupel.policy._policy"]


def test_a_cycle_is_found_wherever_the_import_hides(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg.sub import b\n")
    (package / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import C\n"
    )
    (package / "sub" / "c.py").write_text("def f():\n    from .. import a\n")
    graph = import_graph(module_files(package))
    assert graph["pkg.a"] == {"pkg.sub.b"} and graph["pkg.sub.c"] == {"pkg.a"}
    assert cycles(graph) == [["pkg.a", "pkg.sub.b", "pkg.sub.c"]]
    (package / "sub" / "c.py").write_text("import pkg\n")  # the package, not a module in it
    graph = import_graph(module_files(package))
    assert graph["pkg.sub.c"] == {"pkg"} and cycles(graph) == []
