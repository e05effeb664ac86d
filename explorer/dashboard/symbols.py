"""Symbols on demand: each page's symbols defined where they appear, from :mod:`explorer.glossary`.

Two views of the one glossary, both generated, never typed per page:

- :func:`annotate` marks every glossary symbol of a page's Markdown as
  ``<abbr title="name: meaning">δ</abbr>`` (the browser shows the definition on hover);
  :func:`annotate_views` does it for every text pane of a page, and again when a pane's
  text changes (the page's one-line summary is left as it is: the live region reads it);
- :func:`symbols_panel` is a "Symbols on this page" ``<details>`` that a keyboard reaches
  (Tab to its summary, Enter opens it), listing exactly the symbols the page shows now
  (:func:`page_text`: its introduction, notes, text panes and figures' words), each with
  its name, meaning and a link to the section of docs/algorithms.md defining it.

The glossary's text is escaped wherever it is written into HTML: it is data, never markup.
"""

from __future__ import annotations

import html
import re

import panel as pn

from ..glossary import Symbol, entries, used_in
from .references import ROOT, docs_href, in_site

__all__ = ["annotate", "annotate_views", "figure_words", "page_text", "page_symbols", "symbols_html", "symbols_panel"]

_TAG = re.compile(r"</?[A-Za-z][^>]*>")


def _title(symbol: Symbol) -> str:
    return html.escape(f"{symbol.name}: {symbol.meaning}", quote=True)


def annotate(markdown: str, family: str) -> str:
    """``markdown`` with each use of a glossary symbol of ``family`` wrapped in ``<abbr>``.

    Overlapping uses keep the longest (``α₀`` over ``α``); text already annotated, code
    spans and HTML tags are left alone.

    >>> annotate("every shrink adds δ/2 to α", "sketching")  # doctest: +NORMALIZE_WHITESPACE
    'every shrink adds <abbr title="shrink amount: δ = σ_m² of the full buffer, subtracted from
    every σᵢ² at a shrink">δ</abbr>/2 to <abbr title="RFD&#x27;s regularizer: α = α₀ + Δ/2: RFD
    adds αI to BᵀB, half of what FD shrank away">α</abbr>'
    """
    if not markdown or "<abbr" in markdown:
        return markdown
    protected = [m.span() for m in re.finditer(r"`[^`]*`|<[^>]*>|\]\([^)]*\)", markdown)]
    found = []
    for symbol in used_in(markdown, family):
        for match in re.finditer(symbol.text, markdown, re.MULTILINE):
            if match.end() > match.start() and not any(a < match.end() and match.start() < b
                                                       for a, b in protected):
                found.append((match.start(), -match.end(), symbol))
    out, at = [], 0
    for start, minus_end, symbol in sorted(found, key=lambda item: item[:2]):
        if start < at:
            continue
        out += [markdown[at:start], f'<abbr title="{_title(symbol)}">'
                f"{html.escape(markdown[start:-minus_end])}</abbr>"]
        at = -minus_end
    # an underscore beside a tag could open emphasis: it stays a character (σ_m²)
    return _LONE_UNDERSCORE.sub(r"\\_", "".join(out) + markdown[at:])


_LONE_UNDERSCORE = re.compile(r"(?<=</abbr>)_|(?<!\\)_(?=<abbr)")


def _figure_words(plot) -> list[str]:
    """The words a figure shows: its legend's trace names, titles and annotations."""
    figure = plot.figure
    words = [trace.name for trace in figure.data if trace.name and trace.showlegend is not False]
    layout = figure.layout.to_plotly_json()
    words += [a.get("text", "") for a in layout.get("annotations", [])]
    for key, value in layout.items():
        if (key == "title" or key.startswith(("xaxis", "yaxis"))) and isinstance(value, dict):
            title = value if key == "title" else value.get("title", {})
            words.append(title.get("text", "") if isinstance(title, dict) else str(title))
    return [str(word) for word in words]


def figure_words(page) -> list[str]:
    """The words of ``page``'s figures: legend names, titles, annotations (reading them
    validates every update since the last read: not a thing to do on every Play tick)."""
    return [word for plot in page.plots.values() for word in _figure_words(plot)]


def page_text(page, figures: list[str] | None = None) -> str:
    """Everything a page writes for a reader now, without markup: its introduction and
    notes, the text of its panes and its figures' words (``figures``, when already read)."""
    parts = [page.intro, *page.notes]
    parts += [str(pane.object) for pane in page.views.select(pn.pane.Markdown)]
    parts += figure_words(page) if figures is None else figures
    return _TAG.sub("", "\n".join(parts))


def page_symbols(page, figures: list[str] | None = None) -> tuple[Symbol, ...]:
    """The glossary entries of ``page``'s family that :func:`page_text` uses."""
    return used_in(page_text(page, figures), page.key)


def symbols_html(symbols, family: str) -> str:
    """The "Symbols on this page" ``<details>``: one ``<dt>``/``<dd>`` pair per symbol, with a
    link to its docs section when the docs are served (a source checkout) or shipped (the
    static site, :func:`~explorer.dashboard.references.in_site`)."""
    docs = in_site() or (ROOT / "docs" / "algorithms.md").is_file()
    items = []
    for s in symbols:
        link = (f' <a href="{html.escape(docs_href(s.section), quote=True)}" target="_blank" '
                f'rel="noopener">docs § {html.escape(s.section.split(" ")[0])}</a>') if docs else ""
        items.append(f"<dt>{html.escape(s.symbol)}</dt><dd><strong>{html.escape(s.name)}</strong>: "
                     f"{html.escape(s.meaning)}.{link}</dd>")
    return (f'<details class="symbols" data-family="{html.escape(family, quote=True)}">'
            f"<summary>Symbols on this page ({len(items)})</summary>"
            f'<dl>{"".join(items)}</dl></details>')


SYMBOLS_CSS = ("details.symbols summary { cursor: pointer; } "
               "details.symbols summary:focus-visible { outline: 2px solid currentColor; outline-offset: 2px; } "
               "details.symbols dl { display: grid; grid-template-columns: max-content 1fr; "
               "column-gap: 1em; row-gap: 0.2em; margin: 0.4em 0 0 0; } "
               "details.symbols dt { font-weight: bold; } details.symbols dd { margin: 0; } "
               "details.symbols a { color: inherit; text-decoration: underline; }")
"""The list as two columns (symbol, definition); links in the text's colour, underlined."""


def symbols_panel(page) -> pn.pane.HTML:
    """The page's "Symbols on this page" list, kept to what it shows (:func:`page_symbols`).

    Each text pane's symbols are read again when its text changes (a Play tick changes
    one line, so only that line is read), the introduction's, notes' and figures' when
    the notes change (a restart, a new option); the list is written when the set changes.
    """
    pane = pn.pane.HTML("", margin=(0, 10), sizing_mode="stretch_width", stylesheets=[SYMBOLS_CSS])
    texts = list(page.views.select(pn.pane.Markdown))
    found: dict = {}
    shown: list = [None]

    def read(key, text: str) -> None:
        found[key] = set(used_in(_TAG.sub("", text), page.key))
        present = set().union(*found.values())
        symbols = tuple(s for s in entries(page.key) if s in present)
        if symbols != shown[0]:
            shown[0] = symbols
            pane.object = symbols_html(symbols, page.key)

    def read_frame(*_) -> None:
        read("frame", "\n".join([page.intro, *page.notes, *figure_words(page)]))
    for index, text in enumerate(texts):
        found[index] = set(used_in(_TAG.sub("", str(text.object)), page.key))
        text.param.watch(lambda event, index=index: read(index, str(event.new)), "object")
    read_frame()
    page.param.watch(read_frame, "notes")
    return pane


def annotate_views(page) -> None:
    """Annotate (:func:`annotate`) every Markdown pane of ``page``'s views but its
    ``summary``, now and whenever its text changes."""
    skip = getattr(page, "summary", None)

    def mark(pane) -> None:
        marked = annotate(str(pane.object), page.key)
        if marked != pane.object:
            pane.object = marked
    for pane in page.views.select(pn.pane.Markdown):
        if pane is not skip and isinstance(pane.object, str):
            mark(pane)
            pane.param.watch(lambda event, pane=pane: mark(pane), "object")
