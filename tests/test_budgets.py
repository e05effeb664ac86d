"""Budgets the package keeps, checked by walking its syntax trees.

- No module over 500 lines, no class over 250 (its body included), no module docstring over
  30 lines: a rule is read in one screen beside its paper; a module that outgrows this
  becomes a package split by concern.
- No import cycle between the package's modules, at import time or inside functions.
- Every ``from explorer.x import name`` across modules names something ``explorer.x`` lists
  in ``__all__`` (a submodule of a package is imported as a module).
- No reference to a tracker issue ("issue 12") in ``explorer/`` or ``docs/``: a reader of the
  repository cannot open it; history belongs in commit messages, measured figures in
  ``benchmarks/README.md``.

Each checker is also run on a small tree it must fault, so none of them can pass vacuously.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ISSUE = re.compile(r"\bissues? #?\d+", re.IGNORECASE)
MODULE_LINES, CLASS_LINES, DOCSTRING_LINES = 500, 250, 30


def package_modules(root: Path = ROOT, package: str = "explorer") -> dict[str, Path]:
    """Dotted name -> path of every module of ``package`` under ``root``."""
    modules = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _trees(modules: dict[str, Path]) -> dict[str, ast.Module]:
    return {name: ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for name, path in modules.items()}


def _listed(tree: ast.Module) -> set[str] | None:
    """The names a module's ``__all__`` lists (None: it has none)."""
    for node in tree.body:
        if (isinstance(node, (ast.Assign, ast.AnnAssign))
                and any(getattr(t, "id", None) == "__all__"
                        for t in (node.targets if isinstance(node, ast.Assign) else [node.target]))):
            return set(ast.literal_eval(node.value))
    return None


def _imports(name: str, path: Path, tree: ast.Module, modules: dict[str, Path]):
    """``(target module, imported name or None)`` for each import of a package module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                if f"{target}.{alias.name}" in modules:
                    yield f"{target}.{alias.name}", None
                elif target in modules:
                    yield target, alias.name
        elif isinstance(node, ast.Import):
            yield from ((alias.name, None) for alias in node.names if alias.name in modules)


def oversized(modules: dict[str, Path]) -> list[str]:
    found = []
    for name, tree in _trees(modules).items():
        lines = len(modules[name].read_text(encoding="utf-8").splitlines())
        if lines > MODULE_LINES:
            found.append(f"module {name}: {lines} lines > {MODULE_LINES}")
        doc = ast.get_docstring(tree, clean=False)
        if doc and len(doc.splitlines()) > DOCSTRING_LINES:
            found.append(f"module {name}: docstring of {len(doc.splitlines())} lines > {DOCSTRING_LINES}")
        found += [f"class {name}.{node.name}: {node.end_lineno - node.lineno + 1} lines > {CLASS_LINES}"
                  for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
                  and node.end_lineno - node.lineno + 1 > CLASS_LINES]
    return found


def unlisted_imports(modules: dict[str, Path]) -> list[str]:
    trees = _trees(modules)
    listed = {name: _listed(tree) for name, tree in trees.items()}
    found = []
    for name, tree in trees.items():
        for target, imported in _imports(name, modules[name], tree, modules):
            if imported is not None and target != name and imported not in (listed[target] or ()):
                found.append(f"{name} imports {imported} from {target}, which does not list it in __all__")
    return sorted(set(found))


def import_cycles(modules: dict[str, Path]) -> list[list[str]]:
    """Strongly connected components (more than one module) of the import graph. A package's
    ``__init__`` is a module like any other: one that re-exports a submodule which imports
    names from that ``__init__`` is a cycle (the names may not exist yet when it runs)."""
    trees = _trees(modules)
    graph = {name: {target for target, _ in _imports(name, modules[name], tree, modules)
                    if target != name}
             for name, tree in trees.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components = []

    def visit(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return components


def test_no_module_class_or_module_docstring_over_budget():
    assert oversized(package_modules()) == []


def test_every_cross_module_import_is_listed_in_its_owners_all():
    assert unlisted_imports(package_modules()) == []


def test_no_import_cycle():
    assert import_cycles(package_modules()) == []


def test_the_checkers_fault_a_tree_that_breaks_each_budget(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('"""' + "line\n" * 31 + '"""\n')
    (pkg / "c.py").write_text('"""' + "line\n" * 30 + '"""\n')  # at the budget: not faulted
    (pkg / "a.py").write_text("from .b import g\n__all__ = ['f']\ndef f():\n    pass\n")
    (pkg / "b.py").write_text("__all__ = ['h']\ndef g():\n    from .a import f\n"
                              "class Big:\n" + "    x = 1\n" * 250)
    modules = package_modules(tmp_path, "pkg")
    assert unlisted_imports(modules) == ["pkg.a imports g from pkg.b, which does not list it in __all__"]
    assert import_cycles(modules) == [["pkg.a", "pkg.b"]]
    assert oversized(modules) == ["module pkg: docstring of 31 lines > 30",
                                  "class pkg.b.Big: 251 lines > 250"]


def test_no_issue_numbers_in_the_package_or_its_docs():
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for path in sorted([*ROOT.glob("explorer/**/*.py"), *ROOT.glob("docs/*.md")])
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if ISSUE.search(line)]
    assert not found, "issue numbers (say what happened instead):\n" + "\n".join(found)
