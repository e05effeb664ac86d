"""The glossary (explorer.glossary): complete for every page and lesson, linked, escaped.

- every entry's docs section is a heading of docs/algorithms.md, served with its anchor;
- one meaning per symbol per family;
- every page (a few rows in): each Greek letter its text shows (introduction, notes, text
  panes, figures) belongs to a glossary symbol of its family, the "Symbols on this page"
  list of the layout names exactly the page's symbols, and no Greek letter of an
  annotated pane is left outside an ``<abbr>`` definition;
- every lesson: its "Symbols in this lesson" cell is what tools/lesson_symbols.py writes
  now, and lists every glossary symbol its Markdown uses;
- the glossary's text is data: written into HTML or Markdown it shows as typed.
"""

from __future__ import annotations

import json
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import panel as pn
import pytest

from explorer.dashboard.app import PAGES, Dashboard
from explorer.dashboard.layout import layout
from explorer.dashboard.references import ROOT, docs_href, github_anchor, render_docs
from explorer.dashboard.symbols import annotate, page_symbols, page_text, symbols_html
from explorer.glossary import (
    FAMILIES,
    GLOSSARY,
    Symbol,
    entries,
    escape_markdown,
    markdown_list,
    used_in,
    used_in_markdown,
)

sys.path.insert(0, str(ROOT / "tools"))
import lesson_symbols  # noqa: E402

GREEK = re.compile(r"[\u0370-\u03ff\u2113]")  # Greek and Coptic, and ℓ
LESSONS = sorted((ROOT / "lessons").glob("*.ipynb"))


def headings() -> set[str]:
    lines = (ROOT / "docs/algorithms.md").read_text(encoding="utf-8").splitlines()
    return {line.lstrip("#").strip() for line in lines if re.match(r"#{1,6} ", line)}


def test_every_section_is_a_heading_of_the_docs_served_with_its_anchor():
    served = render_docs()
    for symbol in GLOSSARY:
        assert symbol.section in headings(), f"{symbol.symbol}: no heading {symbol.section!r}"
        anchor = docs_href(symbol.section).split("#")[1]
        assert anchor == github_anchor(symbol.section)
        assert f'id="{anchor}"' in served, f"{symbol.symbol}: /docs/algorithms has no #{anchor}"


def test_one_meaning_per_symbol_in_each_family():
    for family in (None, *FAMILIES):
        symbols = [s.symbol for s in entries(family)]
        assert len(symbols) == len(set(symbols)), family
    pairs = [(s.symbol, family) for s in GLOSSARY for family in (s.families or ("",))]
    assert len(pairs) == len(set(pairs))


def test_unknown_families_are_refused():
    with pytest.raises(ValueError, match="family must be one of"):
        entries("sketch")
    with pytest.raises(ValueError, match="unknown families"):
        Symbol("x", "x", "x", "0.1 Streams and sketches", ("nope",))


# -- the pages ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def dashboard():
    """A dashboard with its layout, every page opened once, a few rows into a small stream."""
    app = Dashboard()
    app.settings.param.update(n=300, d=20, m=5)
    template = layout(app)
    tabs = next(iter(template.main[0].select(pn.Tabs)))
    for key in [cls.key for cls in PAGES]:
        app.page = key
        app.transport.step(40)
    return app, tabs


class Terms(HTMLParser):
    """The ``<dt>`` texts of a symbols list."""

    def __init__(self):
        super().__init__()
        self.terms, self._in = [], False

    def handle_starttag(self, tag, attrs):
        self._in = tag == "dt"
        if self._in:
            self.terms.append("")

    def handle_endtag(self, tag):
        self._in = False

    def handle_data(self, data):
        if self._in:
            self.terms[-1] += data


@pytest.mark.parametrize("index", range(len(PAGES)))
def test_every_symbol_a_page_shows_is_defined_on_it(dashboard, index):
    app, tabs = dashboard
    key = PAGES[index].key
    app.page = key
    page = app.active
    text = page_text(page)
    symbols = page_symbols(page)
    defined = "".join(s.symbol for s in symbols)
    assert symbols, key
    missing = sorted({c for c in GREEK.findall(text) if c not in defined})
    assert missing == [], f"{key}: no glossary entry of its family for {missing}"
    panel = tabs[index].objects[0]
    parser = Terms()
    parser.feed(panel.object)
    assert "Symbols on this page" in panel.object and parser.terms == [s.symbol for s in symbols], key
    skip = getattr(page, "summary", None)
    for pane in page.views.select(pn.pane.Markdown):
        if pane is skip:
            continue
        outside = re.sub(r"<abbr [^>]*>.*?</abbr>|<[^>]*>", "", str(pane.object))
        assert GREEK.findall(outside) == [], f"{key}: not annotated in {pane.object!r}"


def test_the_list_follows_the_page_when_its_text_changes(dashboard):
    app, tabs = dashboard
    app.page = "sketching"
    page = app.active
    index = [cls.key for cls in PAGES].index("sketching")
    before = tabs[index].objects[0].object
    page.summary.object = "**Latest:** μ"  # a symbol the sketching page never shows
    assert "<dt>μ</dt>" in tabs[index].objects[0].object and "<dt>μ</dt>" not in before
    page.refresh()
    assert tabs[index].objects[0].object == before


def test_the_introduction_is_annotated():
    marked = annotate(PAGES[0].intro, PAGES[0].key)
    assert "<abbr title=" in marked and re.sub(r"<[^>]*>", "", marked) == PAGES[0].intro


# -- the lessons -------------------------------------------------------------------------------
@pytest.mark.parametrize("path", LESSONS, ids=[p.stem for p in LESSONS])
def test_each_lesson_lists_the_symbols_it_uses(path):
    notebook = json.loads(path.read_text(encoding="utf-8"))
    cells = [c for c in notebook["cells"] if lesson_symbols.is_symbols_cell(c)]
    assert len(cells) == 1 and notebook["cells"][1] is cells[0], path.stem
    source = "".join(cells[0]["source"])
    assert source == lesson_symbols.symbols_cell_text(path), f"run tools/lesson_symbols.py ({path.stem})"
    used = used_in_markdown(lesson_symbols.lesson_markdown(notebook), lesson_symbols.family_of(path.stem))
    assert used
    for symbol in used:
        assert f"- **{escape_markdown(symbol.symbol)}** ({escape_markdown(symbol.name)})" in source


def test_the_tool_finds_a_stale_cell(tmp_path):
    lesson = tmp_path / LESSONS[0].name
    notebook = json.loads(LESSONS[0].read_text(encoding="utf-8"))
    cell = notebook["cells"][1]
    cell["source"] = cell["source"][:3]
    lesson.write_text(json.dumps(notebook, indent=1, ensure_ascii=False, sort_keys=True) + "\n",
                      encoding="utf-8")
    assert lesson_symbols.main(["--check", str(lesson)]) == 1
    assert lesson_symbols.main([str(lesson)]) == 0
    assert lesson.read_text(encoding="utf-8") == LESSONS[0].read_text(encoding="utf-8")


def test_a_lesson_in_no_family_is_refused():
    with pytest.raises(ValueError, match="in no page's references"):
        lesson_symbols.family_of("99_none")


# -- finding symbols, and their text as data ---------------------------------------------------
def test_symbols_are_found_as_symbols_not_inside_words():
    assert [s.symbol for s in used_in("A shrink of the user's data", "sketching")] == []
    assert {s.symbol for s in used_in("‖A − A_k‖ and BᵀB + α₀I", "sketching")} >= {"A", "A_k", "B", "α₀", "I"}
    assert "α" not in {s.symbol for s in used_in("α₀ only", "sketching")}
    assert [s.symbol for s in used_in_markdown(r"the $\max$ of $\mathbb{R}$ and `delta`", "sketching")] == []
    assert [s.symbol for s in used_in_markdown(r"$\hat a^\top \Theta \hat a$", "fm")] == ["Θ", "â"]


def test_glossary_text_is_data_in_html_and_markdown():
    odd = Symbol("<b>", 'x"<script>', "a & b_c *d* [e](f)", "0.1 Streams and sketches", text=r"<b>")
    html_text = symbols_html([odd], "sketching")
    assert "<script>" not in html_text and "<b>" not in html_text
    assert "&lt;b&gt;" in html_text and "x&quot;&lt;script&gt;" in html_text and "a &amp; b_c" in html_text
    line = markdown_list([odd], lambda section: "#here")
    assert line == r'- **\<b\>** (x"\<script\>): a \& b\_c \*d\* \[e\](f) · [docs § 0.1](#here)'
    assert escape_markdown("σ_m² <i>$x$</i>") == r"σ\_m² \<i\>\$x\$\</i\>"


def test_the_symbols_list_links_the_docs_in_the_static_site_too(monkeypatch):
    """In the static site (Pyodide, no docs/ beside the wheel) the links go to the docs the
    site ships; they were left out there."""
    import explorer.dashboard.references as references
    from explorer.dashboard import symbols
    from explorer.glossary import entries

    some = entries("sketching")[:2]
    monkeypatch.setattr(symbols, "ROOT", references.ROOT / "no-such-checkout")
    assert "docs §" not in symbols.symbols_html(some, "sketching")  # no docs: no links
    monkeypatch.setattr(references.sys, "platform", "emscripten")
    html = symbols.symbols_html(some, "sketching")
    assert html.count("docs §") == 2 and 'href="../docs/algorithms.html#' in html
