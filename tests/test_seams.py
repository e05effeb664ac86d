"""The seams between modules (issue 14): checked by walking the package's syntax trees.

- No module reads, writes or imports another module's private names: ``obj._name`` only
  on ``self``/``cls`` or for a name the same module defines, and never
  ``from module import _name``. A private *module* (``_validation``, ``pca/_base``) is
  imported only from inside the package that holds it.
- One class named ``History`` (:class:`explorer.history.History`).
- Figures live in :mod:`explorer.plots`: no other top-level module imports plotly.
- No notebook defines its own ``sig()``: :func:`explorer.report.sig` is the one home.
"""

from __future__ import annotations

import ast
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "explorer"


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path, ast.parse(path.read_text(), filename=str(path))


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _defined_names(tree: ast.AST) -> set[str]:
    """Names a module defines: functions, classes, assigned names and attributes."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _package_of(path: pathlib.Path) -> tuple[str, ...]:
    return path.relative_to(ROOT).parent.parts


def _resolve(path: pathlib.Path, node: ast.ImportFrom) -> tuple[str, ...]:
    """The absolute dotted parts of ``from <module> import ...`` in ``path``."""
    base = _package_of(path)
    if node.level:
        base = base[:len(base) - (node.level - 1)]
    else:
        base = ()
    return base + tuple((node.module or "").split(".")) if node.module else base


def cross_module_private_uses() -> list[str]:
    found = []
    for path, tree in _modules():
        own = _defined_names(tree)
        where = path.relative_to(ROOT)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in own:
                value = node.value
                if not (isinstance(value, ast.Name) and value.id in ("self", "cls")):
                    found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
            elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
                target = _resolve(path, node)
                found += [f"{where}:{node.lineno}: imports {alias.name} from {'.'.join(target)}"
                          for alias in node.names if _private(alias.name)]
                for i, part in enumerate(target):
                    if _private(part) and _package_of(path)[:i] != target[:i]:
                        found.append(f"{where}:{node.lineno}: imports the private module "
                                     f"{'.'.join(target)} from outside its package")
    return found


def test_no_module_uses_another_modules_private_names():
    assert cross_module_private_uses() == []


def test_the_checker_sees_a_private_reach_in(tmp_path):
    tree = ast.parse("def f(sketch):\n    return sketch._buffer\n")
    own = _defined_names(tree)
    reach = [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and _private(n.attr)
             and n.attr not in own]
    assert len(reach) == 1


def test_one_class_named_history():
    homes = [f"{path.relative_to(ROOT)}" for path, tree in _modules() for node in ast.walk(tree)
             if isinstance(node, ast.ClassDef) and node.name == "History"]
    assert homes == ["explorer/history.py"]


def test_figures_live_in_explorer_plots():
    drawing = []
    for path, tree in _modules():
        if path.parent != PACKAGE:
            continue
        for node in ast.walk(tree):
            imported = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                        else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(name.split(".")[0] == "plotly" for name in imported):
                drawing.append(path.name)
    assert drawing == []


def test_no_notebook_defines_its_own_sig():
    defining = []
    for path in sorted([*ROOT.glob("lessons/*.ipynb"), *ROOT.glob("notebooks/*.ipynb")]):
        cells = json.loads(path.read_text())["cells"]
        if any("def sig(" in "".join(cell["source"]) for cell in cells):
            defining.append(path.name)
    assert defining == []
