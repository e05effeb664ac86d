"""One visual language: every method and concept keeps one colour, from explorer/plots/style.py.

- every colour literal of explorer/ lives in explorer/plots/style.py, except CSS for the
  dashboard's text and chrome (:func:`_allowed`);
- every trace a dashboard page's figure module draws for a method has the method's colour;
- every colour a lesson's or notebook's code cell gives a method is the style's, except the
  :data:`KNOWN_MISMATCHES` (the notebooks are read, never run or edited here).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import pathlib
import re

import pytest

from explorer.plots import style
from explorer.plots.style import CONCEPT_COLORS, METHOD_COLORS, contrast, method_color

ROOT = pathlib.Path(__file__).resolve().parents[1]
HEX = re.compile(r"#[0-9a-fA-F]{3}(?:[0-9a-fA-F]{3})?(?:[0-9a-fA-F]{2})?\b")
NAMED = {"black", "white", "red", "blue", "green", "orange", "grey", "gray", "purple", "brown", "pink",
         "yellow", "cyan", "magenta", "lightgrey", "lightgray", "darkgrey", "darkgray", "navy", "teal",
         "olive"}
FIGURE_MODULES = ("adagrad", "fm", "newton", "pca", "sketching")

# A lesson's or notebook's colour for a method that is not the style's: (notebook, label,
# colour given, colour of the style). The lessons' and notebooks' owner fixes these.
KNOWN_MISMATCHES: set = set()


def _is_color(value) -> bool:
    return isinstance(value, str) and (bool(HEX.fullmatch(value)) or value.lower() in NAMED)


def _method(label: str) -> str | None:
    """The method ``label`` names: its start (as :func:`method_color`), or, for a short label
    such as lesson 5's ``"Follow"``, the one method whose name starts with it."""
    starts = [key for key in METHOD_COLORS if label.upper().startswith(key.upper())]
    if starts:
        return max(starts, key=len)
    abbreviated = [key for key in METHOD_COLORS if len(label) >= 4 and key.upper().startswith(label.upper())]
    return abbreviated[0] if len({METHOD_COLORS[key] for key in abbreviated}) == 1 else None


# ---------------------------------------------------------------- the palette itself
def test_every_line_colour_reads_on_white():
    lines = {**METHOD_COLORS, **{k: v for k, v in CONCEPT_COLORS.items() if k != "guide"},
             **{f"GFD {half}": v for half, v in style.GFD_HALVES.items()}}
    weak = {name: round(contrast(color), 2) for name, color in lines.items() if contrast(color) < 3.0}
    assert not weak, f"line colours under 3:1 on white: {weak}"


@pytest.mark.parametrize("names", [
    ("ADA-FULL", "ADA-DIAG", "ADA-FD", "ADA-FFD", "OGD", "Adam"),
    ("RFD-SON", "FD-SON", "RP-SON", "FULL-ON", "ADAGRAD", "Oja-SON"),
    ("S-FTRL", "FTRL", "OGD", "OCG"),
    ("Follow the Leader", "best fixed projection", "static online PCA", "adaptive PCA"),
    ("FD", "RFD", "RP"),
])
def test_methods_drawn_together_are_told_apart(names):
    colors = [method_color(name) for name in names]
    assert None not in colors and len(set(colors)) == len(colors), dict(zip(names, colors))


def test_related_methods_share_a_colour():
    assert method_color("FD") == method_color("FD-SON") == method_color("ADA-FD")
    assert method_color("RFD") == method_color("RFD-SON")
    assert method_color("RP") == method_color("RP-SON")
    assert method_color("FULL-ON") == method_color("ADA-FULL") == method_color("FTRL") == style.EXACT_GREY
    assert method_color("ADAGRAD") == method_color("ADA-DIAG")
    assert method_color("OGD") == method_color("OGD-FM")
    assert method_color("S-FTRL (m = 5)") == method_color("GFD")


# ---------------------------------------------------------------- explorer/ has no other colour
def _allowed(node: ast.Constant, parents: dict) -> bool:
    """CSS for the dashboard's text and chrome: a stylesheet (a string with ``{`` or ``;``),
    a ``styles={...}`` value or a dict of CSS properties (a key such as ``"font-size"``), a
    ``header_background=``, or a docstring."""
    if "{" in node.value or ";" in node.value:
        return True
    parent = parents.get(node)
    if isinstance(parent, ast.Expr):
        return True
    if isinstance(parent, ast.keyword) and parent.arg == "header_background":
        return True
    if isinstance(parent, ast.Dict):
        holder = parents.get(parent)
        css = any(isinstance(key, ast.Constant) and "-" in str(key.value) for key in parent.keys)
        return css or isinstance(holder, ast.keyword) and holder.arg == "styles"
    return False


def test_every_colour_literal_lives_in_the_style():
    strays = []
    for path in sorted((ROOT / "explorer").rglob("*.py")):
        if path == ROOT / "explorer/plots/style.py":
            continue
        tree = ast.parse(path.read_text())
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            literal = HEX.search(node.value) or node.value.strip().lower() in NAMED \
                or re.search(r"rgba?\(", node.value)
            if literal and not _allowed(node, parents):
                strays.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value[:40]!r}")
    assert not strays, "colour literals outside explorer/plots/style.py:\n" + "\n".join(strays)


# ---------------------------------------------------------------- the dashboard's figures
def _trace_color(trace):
    line = getattr(trace, "line", None)
    marker = getattr(trace, "marker", None)
    return (line.color if line is not None and line.color else None) or (marker.color if marker is not None else None)


@pytest.mark.parametrize("page", FIGURE_MODULES)
def test_dashboard_figures_draw_each_method_in_its_colour(page):
    module = importlib.import_module(f"explorer.dashboard.pages.{page}_figures")
    builders = [f for name, f in vars(module).items() if name.endswith("_figure") and inspect.isfunction(f)
                and f.__module__ == module.__name__ and not inspect.signature(f).parameters]
    assert builders
    checked = 0
    for build in builders:
        for trace in build().data:
            expected = method_color(trace.name or "")
            if expected is not None and "before" not in (trace.name or ""):
                assert _trace_color(trace) == expected, (build.__name__, trace.name)
                checked += 1
    assert checked, f"no trace of {page}'s figures names a method"


def test_every_method_a_page_shows_has_a_colour():
    from explorer.adagrad import LABELS, LEARNERS
    from explorer.dashboard.pages.pca_figures import METHODS
    from explorer.experiments.fm import LEARNER_NAMES
    from explorer.experiments.newton import LEARNERS as NEWTON
    shown = [*(LABELS[key] for key in LEARNERS), *LEARNER_NAMES.values(), *NEWTON, *METHODS]
    assert [name for name in shown if method_color(name) is None] == []


# ---------------------------------------------------------------- lessons and notebooks
_SAFE = {"dict": dict, "zip": zip, "enumerate": enumerate, "len": len, "list": list, "tuple": tuple}


def _evaluate(expr: ast.AST, env: dict):
    try:
        return eval(compile(ast.Expression(expr), "<cell>", "eval"), {**env, "__builtins__": _SAFE})
    except Exception:
        return None


def _colour_pairs(tree: ast.AST, env: dict):
    """(label, colour) pairs the cell gives: colour tables (assigned or ``colors=``) and
    ``name="..."`` traces with a colour."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = _evaluate(node.value, env)
            if value is not None:
                env[node.targets[0].id] = value
            if isinstance(value, dict):
                yield from value.items()
        elif isinstance(node, ast.keyword) and node.arg == "colors":
            value = _evaluate(node.value, env)
            if isinstance(value, dict):
                yield from value.items()
        elif isinstance(node, ast.Call):
            kw = {k.arg: k.value for k in node.keywords if k.arg}
            if isinstance(kw.get("name"), ast.Constant):
                for key in ("line", "marker", "line_color", "marker_color"):
                    value = _evaluate(kw[key], env) if key in kw else None
                    color = value.get("color") if isinstance(value, dict) else value
                    if _is_color(color):
                        yield kw["name"].value, color


def _notebook_mismatches():
    base = {name: getattr(style, name) for name in style.__all__}
    found = set()
    for path in sorted([*ROOT.glob("lessons/*.ipynb"), *ROOT.glob("notebooks/*.ipynb")]):
        env = dict(base)
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"])
            source = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())
            try:
                tree = ast.parse(source)
            except SyntaxError:
                continue
            for label, color in _colour_pairs(tree, env):
                method = _method(label) if isinstance(label, str) and _is_color(color) else None
                if method and color.lower() != METHOD_COLORS[method].lower():
                    found.add((str(path.relative_to(ROOT)), label, color.lower(), METHOD_COLORS[method]))
    return found


def test_lessons_and_notebooks_give_each_method_the_style_colour():
    found = _notebook_mismatches()
    new = sorted(found - KNOWN_MISMATCHES)
    assert not new, "a lesson or notebook gives a method another colour than style.METHOD_COLORS:\n" + \
        "\n".join(map(str, new))


def test_methods_drawn_together_differ_in_lightness_too():
    """Red and diagonal AdaGrad's brown, blue and ADA-FFD's navy share a figure: their
    contrasts on white differ by at least 1.5 (told apart without telling hues apart)."""
    for a, b in (("RFD-SON", "ADAGRAD"), ("ADA-FD", "ADA-FFD"), ("ADA-DIAG", "ADA-FFD")):
        assert abs(contrast(method_color(a)) - contrast(method_color(b))) >= 1.5, (a, b)


def test_builders_draw_a_method_in_its_colour_and_two_of_its_curves_apart():
    from explorer.plots import bar_chart, line_chart
    fig = line_chart([1, 2], {"ADA-FULL": [1, 2], "ADA-FD (τ = 5)": [1, 2], "ADA-FD PDS": [1, 2]})
    full, fd, fd_pds = (trace.line.color for trace in fig.data)
    assert (full, fd) == (method_color("ADA-FULL"), method_color("ADA-FD")) and fd_pds != fd
    bars = bar_chart(["a"], {"exact FD": [1], "FD": [1], "RFD": [1]})
    assert [trace.marker.color for trace in bars.data][1:] == [method_color("FD"), method_color("RFD")]


def test_a_colour_table_naming_more_methods_than_drawn_does_not_push_the_others_off():
    from explorer.plots import series_colors
    assert series_colors(["RFD-SON", "Oja-SON"], colors=METHOD_COLORS) == {
        "RFD-SON": METHOD_COLORS["RFD-SON"], "Oja-SON": METHOD_COLORS["Oja-SON"]}
    assert series_colors(["FD", "RP sketch"], colors={"FD": "#000000", "RFD": METHOD_COLORS["RP"]}) == {
        "FD": "#000000", "RP sketch": METHOD_COLORS["RP"]}
