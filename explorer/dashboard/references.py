"""Where each dashboard page is explained: its lessons and its sections of docs/algorithms.md.

:data:`REFERENCES` is the one map from a page's key to its :class:`Reference`; the layout
draws it as links under the page's introduction (:func:`reference_links`), and
tests/test_dashboard_references.py checks every target exists. The other direction, a
lesson's link to its page with the lesson's setting, is a URL in the lesson's first cell
(:func:`dashboard_url` writes one).

The server (:func:`~.server.serve`) answers the link targets itself, read-only and from
fixed routes, so they work with no other program running (:func:`routes`):
``/docs/algorithms`` is ``docs/algorithms.md`` as HTML, each heading with the anchor GitHub
gives it (:func:`github_anchor`), and ``/lessons/NN_name`` is that lesson's text, code and
checked outputs (to run it and play with its widgets: ``make lab``). No route reads a path
from the request, and outside a source checkout (no ``docs/`` next to the package) there
are no routes and no links.
"""

from __future__ import annotations

import html
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

from markdown_it import MarkdownIt
from tornado.web import RequestHandler

__all__ = ["Reference", "REFERENCES", "DASHBOARD", "ROOT", "github_anchor", "lesson_href", "docs_href", "served_href",
           "site_href", "in_site", "dashboard_url", "reference_links", "render_docs", "render_lesson", "routes"]

ROOT = Path(__file__).resolve().parents[2]
"""The source checkout holding ``docs/`` and ``lessons/`` (when the package runs from one)."""
DOCS = "docs/algorithms.md"
DASHBOARD = "http://127.0.0.1:5006/"
"""Where ``explorer serve`` (``make serve``) puts the dashboard by default."""


@dataclass(frozen=True)
class Reference:
    """A page's lessons, as ``(file name without .ipynb, title)``, and the headings of its
    sections in docs/algorithms.md, as written there."""

    lessons: tuple[tuple[str, str], ...]
    sections: tuple[str, ...]


REFERENCES = {
    "sketching": Reference(
        lessons=(("01_frequent_directions", "Lesson 1 · Frequent Directions"),
                 ("02_robust_frequent_directions", "Lesson 2 · Robust Frequent Directions"),
                 ("07_sketching_past_one_machine", "Lesson 7 · Sketching past one machine")),
        sections=("1. Frequent Directions (FD)", "2. Robust Frequent Directions (RFD)")),
    "newton": Reference(
        lessons=(("03_sketched_online_newton", "Lesson 3 · The sketched online Newton step"),),
        sections=("3. Sketched online Newton step (FD-SON, RFD-SON, RP-SON, Oja-SON, FULL-ON)",)),
    "adagrad": Reference(
        lessons=(("04_adagrad_on_a_sketch", "Lesson 4 · Adaptive gradients on a sketch"),),
        sections=("4. Adaptive subgradient with FD (ADA-FULL, ADA-DIAG, ADA-FD, ADA-FFD)",)),
    "pca": Reference(
        lessons=(("05_online_adaptive_pca", "Lesson 5 · Online adaptive PCA"),),
        sections=("5. Online adaptive PCA (capping, mixture decomposition, fixed share)",)),
    "fm": Reference(
        lessons=(("06_sketched_ftrl_fm", "Lesson 6 · Sketched FTRL for factorization machines"),),
        sections=("6. Generalized FD and sketched FTRL for factorization machines",)),
}
"""Page key -> its lessons and docs sections (the layout's links, the server's routes)."""


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading: lower case, every character that is not a
    letter, digit, space, ``-`` or ``_`` dropped, each space a ``-``.

    >>> github_anchor("3. Sketched online Newton step (FD-SON, RFD-SON)")
    '3-sketched-online-newton-step-fd-son-rfd-son'
    """
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def in_site() -> bool:
    """Whether the package runs in the static site's Pyodide (``sys.platform == "emscripten"``)."""
    return sys.platform == "emscripten"


def site_href(href: str) -> str:
    """A served address (``/lessons/NN_name``, ``/docs/algorithms#anchor``) as the static
    site's address of the same thing, relative to a page one folder below the site's root
    (``dashboard/index.html``, ``docs/algorithms.html``): the lesson in the site's
    JupyterLite, the docs as rendered at build time. Other links as they are.

    >>> site_href("/lessons/01_frequent_directions")
    '../lab/index.html?path=lessons/01_frequent_directions.ipynb'
    >>> site_href("/docs/algorithms#0-notation"), site_href("https://a.org")
    ('../docs/algorithms.html#0-notation', 'https://a.org')
    """
    if lesson := re.fullmatch(r"/lessons/(\w+)", href):
        return f"../lab/index.html?path=lessons/{lesson.group(1)}.ipynb"
    if docs := re.fullmatch(r"/docs/algorithms(#\S*)?", href):
        return f"../docs/algorithms.html{docs.group(1) or ''}"
    return href


def lesson_href(stem: str) -> str:
    """The served address of lesson ``stem`` (``"01_frequent_directions"``); in the static
    site, its address there (:func:`site_href`)."""
    href = f"/lessons/{stem}"
    return site_href(href) if in_site() else href


def docs_href(section: str) -> str:
    """The served address of ``section`` of docs/algorithms.md (its heading's anchor); in the
    static site, its address there (:func:`site_href`)."""
    href = f"/docs/algorithms#{github_anchor(section)}"
    return site_href(href) if in_site() else href


def dashboard_url(page: str, **settings) -> str:
    """The dashboard's address showing ``page`` with ``settings`` (a lesson's link to it).

    >>> dashboard_url("sketching", m=10, dataset="low rank + noise")
    'http://127.0.0.1:5006/?page=sketching&m=10&dataset=low+rank+%2B+noise'
    """
    return DASHBOARD + "?" + urlencode({"page": page, **settings})


def reference_links(key: str) -> list[tuple[str, str]]:
    """``(text, href)`` of page ``key``'s links: its lessons (their titles), then its docs
    sections (the heading without its parenthesis); none when the docs are not there to serve
    (outside a source checkout and outside the static site, which ships them).

    >>> reference_links("pca")[1]
    ('docs/algorithms.md § 5. Online adaptive PCA', '/docs/algorithms#5-online-adaptive-pca-capping-mixture-decomposition-fixed-share')
    """
    if key not in REFERENCES or not ((ROOT / DOCS).is_file() or in_site()):
        return []
    reference = REFERENCES[key]
    return [*((title, lesson_href(stem)) for stem, title in reference.lessons),
            *((f"docs/algorithms.md § {section.split(' (')[0]}", docs_href(section))
              for section in reference.sections)]


_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("table")
_STYLE = ("body{font:16px/1.5 system-ui,sans-serif;max-width:52em;margin:2em auto;padding:0 1em}"
          "pre{background:#f6f8fa;padding:.6em;overflow-x:auto}pre.out{background:#fff;"
          "border-left:3px solid #999}table{border-collapse:collapse}td,th{border:1px solid #ccc;"
          "padding:.2em .5em}")


def _page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}'
            f"</title><style>{_STYLE}</style></head><body>{body}</body></html>")


def _markdown(text: str, site: bool = False) -> str:
    """``text`` (our own Markdown) with GitHub's heading anchors; HTML comments (the lessons'
    claim markers) are left out and any other raw HTML is shown as text, never run. Links
    to the docs lead to the served copy, or with ``site`` to the static site's."""
    tokens = _MARKDOWN.parse(re.sub(r"<!--.*?-->", "", text, flags=re.S))
    for opening, inline in zip(tokens, tokens[1:]):
        if opening.type == "heading_open":
            opening.attrSet("id", github_anchor(inline.content))
    for token in tokens:
        for child in token.children or ():
            if child.type == "link_open":
                href = served_href(str(child.attrGet("href") or ""))
                child.attrSet("href", site_href(href) if site else href)
    return _MARKDOWN.renderer.render(tokens, _MARKDOWN.options, {})


def served_href(href: str) -> str:
    """A link written for the repository (``../docs/algorithms.md#01-streams-and-sketches``,
    as the lessons write it for JupyterLab and GitHub) as the address this server answers;
    other links as they are.

    >>> served_href("../docs/algorithms.md#01-streams-and-sketches"), served_href("https://a.org")
    ('/docs/algorithms#01-streams-and-sketches', 'https://a.org')
    """
    match = re.fullmatch(r"(?:\.\./)?docs/algorithms\.md(#\S*)?", href)
    return f"/docs/algorithms{match.group(1) or ''}" if match else href


def render_docs(site: bool = False) -> str:
    """docs/algorithms.md as an HTML page (TeX stays as written); with ``site``, the static
    site's copy (``docs/algorithms.html``, its links to the docs as :func:`site_href` gives)."""
    text = (ROOT / DOCS).read_text(encoding="utf-8")
    return _page("Sketch Explorer: algorithms", _markdown(text, site))


def render_lesson(stem: str) -> str:
    """Lesson ``stem`` as an HTML page: its Markdown, its code and the outputs stored with it."""
    cells = json.loads((ROOT / "lessons" / f"{stem}.ipynb").read_text(encoding="utf-8"))["cells"]
    parts = [f"<p><em>A read-only view of lessons/{html.escape(stem)}.ipynb. To run it and play "
             "with its widgets, open it in JupyterLab (<code>make lab</code>).</em></p>"]
    for cell in cells:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            parts.append(_markdown(source))
        elif cell["cell_type"] == "code":
            parts.append(f"<pre><code>{html.escape(source)}</code></pre>")
            for output in cell.get("outputs", []):
                text = output.get("text") or output.get("data", {}).get("text/plain", "")
                if text:
                    parts.append(f'<pre class="out">{html.escape("".join(text))}</pre>')
    return _page(stem, "\n".join(parts))


class _Fixed(RequestHandler):
    """Answers GET with the page ``render()`` makes (no part of the request is read)."""

    def initialize(self, render) -> None:
        self._render = render

    def get(self) -> None:
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.write(self._render())


def routes() -> list[tuple]:
    """Tornado routes of every link target (``pn.serve(..., extra_patterns=routes())``)."""
    if not (ROOT / DOCS).is_file():
        return []
    lessons = [stem for reference in REFERENCES.values() for stem, _ in reference.lessons]
    return [(r"/docs/algorithms", _Fixed, dict(render=render_docs)),
            *((re.escape(lesson_href(stem)), _Fixed, dict(render=lambda stem=stem: render_lesson(stem)))
              for stem in lessons if (ROOT / "lessons" / f"{stem}.ipynb").is_file())]
