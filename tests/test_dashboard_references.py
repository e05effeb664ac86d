"""Lessons and dashboard pages link to each other, and no link is broken.

- every lesson links (in its first cell, and beside its sliders if it has any) to its
  dashboard page with its setting: the link's query passes the dashboard's own cleaning
  (``clean_query``) and Panel's parser, every key is one the dashboard reads, and applying it
  (``apply_query``) gives no message, and the settings' stream no note;
- every dashboard page links to its lessons and to its sections of docs/algorithms.md
  (``explorer.dashboard.references``): the lesson files exist and carry the titles shown,
  the anchors are those GitHub gives the headings (computed here independently), and the
  server's routes answer each link with the heading's anchor in the page;
- the layout draws the active page's links as ``<a href>`` with their text.
"""

from __future__ import annotations

import asyncio
import json
import pathlib
import re
import threading
import unicodedata
from html.parser import HTMLParser
from urllib.parse import unquote, urlsplit

import pytest
from panel.util import parse_query
import requests
from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets
from tornado.web import Application

from explorer.dashboard.app import PAGES, Dashboard
from explorer.dashboard.layout import references
from explorer.dashboard.page import Page
from explorer.dashboard.references import DASHBOARD, REFERENCES, reference_links, routes
from explorer.dashboard.settings import URL_NAMES, apply_query, clean_query

ROOT = pathlib.Path(__file__).resolve().parents[1]
LESSONS = sorted((ROOT / "lessons").glob("[0-9][0-9]_*.ipynb"))
LINK = re.compile(r"\]\((" + re.escape(DASHBOARD) + r"[^)\s]*)\)")
KEYS = [cls.key for cls in PAGES]


def cells(path: pathlib.Path) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def links_in(cell: dict) -> list[str]:
    return LINK.findall("".join(cell["source"])) if cell["cell_type"] == "markdown" else []


def github_slug(heading: str) -> str:
    """GitHub's heading anchor: lower case; letters, marks, digits, connector punctuation,
    ``-`` and spaces kept, everything else dropped; spaces become ``-``."""
    kept = "".join(ch for ch in heading.lower()
                   if ch in "- " or unicodedata.category(ch)[0] in "LMN" or unicodedata.category(ch) == "Pc")
    return kept.replace(" ", "-")


def docs_anchors() -> set[str]:
    text, anchors, fenced = (ROOT / "docs/algorithms.md").read_text(encoding="utf-8"), set(), False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} ", line):
            anchors.add(github_slug(line.lstrip("#").strip()))
    return anchors


def problems_of(url: str) -> list[str]:
    """Everything the dashboard would say (or silently ignore) when opened at ``url``."""
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == DASHBOARD, url
    app = Dashboard()
    parameters = app.url_parameters()
    search, problems = clean_query("?" + parts.query, parameters)
    values = parse_query(search)  # Panel's parser (it drops the leading "?")
    problems += [f"{key} is not a key the dashboard reads" for key in values if key not in parameters]
    if values.get("page") not in KEYS:
        return [*problems, f"page = {values.get('page')} names no page"]
    problems += apply_query(app, {"page": values["page"]})
    problems += apply_query(app.settings, values, URL_NAMES)
    options = [name for name in app.active.param if name not in Page.param and name != "name"]
    problems += apply_query(app.active, values, options)
    problems += app.settings.stream()[1] + app.messages
    return problems


# ---------------------------------------------------------------- lessons -> dashboard
@pytest.mark.parametrize("path", LESSONS, ids=lambda path: path.stem)
def test_every_lesson_links_to_its_page_with_a_setting_the_dashboard_takes(path):
    notebook = cells(path)
    top = links_in(notebook[0])
    assert top, f"{path.name}: no dashboard link in its first cell"
    sliders = [i for i, cell in enumerate(notebook)
               if cell["cell_type"] == "code" and "interactive_output(" in "".join(cell["source"])]
    beside = []
    if sliders:  # the section of the sliders: from its "## " heading down to them
        start = max(i for i, cell in enumerate(notebook[:sliders[0]]) if cell["cell_type"] == "markdown"
                    and re.search(r"^## ", "".join(cell["source"]), re.M))
        beside = [link for cell in notebook[start:sliders[0]] for link in links_in(cell)]
        assert beside, f"{path.name}: no dashboard link in the section of its sliders"
    for url in {*top, *beside}:
        assert problems_of(url) == [], url


def test_a_broken_link_is_seen():
    """The check above is not blind: a bad value, an unknown key or page, a note, are all seen."""
    assert problems_of(DASHBOARD + "?page=sketching&m=7") == []
    for query in ("page=sketching&m=1000", "page=sketching&mm=7", "page=nope",
                  "page=sketching&dataset=digits&d=50", "page=newton&eta=0", "page=pca&k=true"):
        assert problems_of(DASHBOARD + "?" + query), query


# ---------------------------------------------------------------- pages -> lessons, docs
def test_every_page_has_its_references_and_only_pages_do():
    assert sorted(REFERENCES) == sorted(KEYS)
    for key in KEYS:
        hrefs = [href for _, href in reference_links(key)]
        assert any(href.startswith("/lessons/") for href in hrefs), key
        assert any(href.startswith("/docs/algorithms#") for href in hrefs), key


@pytest.mark.parametrize("key", KEYS)
def test_a_pages_lessons_exist_with_the_titles_shown(key):
    for stem, title in REFERENCES[key].lessons:
        path = ROOT / "lessons" / f"{stem}.ipynb"
        assert path.is_file(), stem
        heading = "".join(cells(path)[0]["source"]).splitlines()[0]
        assert heading == f"# {title}" or heading.startswith(f"# {title}:"), (heading, title)
        assert (title, f"/lessons/{stem}") in reference_links(key)


@pytest.mark.parametrize("key", KEYS)
def test_a_pages_docs_links_name_headings_of_the_docs(key):
    anchors = docs_anchors()
    assert "1-frequent-directions-fd" in anchors  # as GitHub spells it (the docs' own contents list)
    docs = [href for _, href in reference_links(key) if href.startswith("/docs/")]
    for section, href in zip(REFERENCES[key].sections, docs, strict=True):
        assert href == "/docs/algorithms#" + github_slug(section)
        assert href.split("#")[1] in anchors, f"{key}: no heading of docs/algorithms.md has {href}"


@pytest.fixture(scope="module")
def routes_url():
    """The routes ``explorer serve`` adds, served on 127.0.0.1 by tornado in a thread of its
    own with its own event loop: a test of the same session (Playwright's sync API) may hold
    a running loop in the main thread, where tornado's AsyncHTTPTestCase cannot start one."""
    sockets = bind_sockets(0, "127.0.0.1")
    started, loop = threading.Event(), asyncio.new_event_loop()

    def serve():
        asyncio.set_event_loop(loop)
        HTTPServer(Application(routes())).add_sockets(sockets)
        started.set()
        loop.run_forever()
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert started.wait(30), "the routes' server did not start"
    yield f"http://127.0.0.1:{sockets[0].getsockname()[1]}"
    loop.call_soon_threadsafe(loop.stop)
    thread.join(30)


def test_every_link_target_is_served(routes_url):
    """The routes ``explorer serve`` adds answer every page's links, the anchor in the page."""
    seen = 0
    for key in KEYS:
        for text, href in reference_links(key):
            path, _, anchor = href.partition("#")
            response = requests.get(routes_url + path, timeout=30)
            assert response.status_code == 200, href
            assert response.headers["Content-Type"].startswith("text/html")
            body = response.text
            assert "&lt;!--" not in body, href  # the claim markers are not shown
            if anchor:
                assert f'id="{anchor}"' in body, href
            else:
                assert "lessons/" in body and "<pre><code>" in body, href
            seen += 1
    assert seen >= 2 * len(KEYS)


def test_nothing_else_is_served(routes_url):
    for path in ("/lessons/../README.md", "/lessons/01_frequent_directions.ipynb", "/docs/README.md",
                 "/docs/algorithms.md", "/lessons/99_none"):
        assert requests.get(routes_url + path, timeout=30).status_code == 404, path


# ---------------------------------------------------------------- the layout draws them
class Anchors(HTMLParser):
    def __init__(self):
        super().__init__()
        self.found, self._href = [], None

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self._href = dict(attrs).get("href")
            self.found.append([self._href, ""])

    def handle_data(self, data):
        if self._href is not None:
            self.found[-1][1] += data

    def handle_endtag(self, tag):
        if tag == "a":
            self._href = None


def test_the_layout_shows_the_active_pages_links():
    app = Dashboard()
    pane = references(app)
    for key in [*KEYS[1:], KEYS[0]]:
        app.page = key
        parser = Anchors()
        parser.feed(pane.object)
        assert [(text, href) for href, text in parser.found] == reference_links(key), key


def test_every_docs_link_of_a_served_lesson_reaches_a_heading_of_the_served_docs():
    """The lessons link to ../docs/algorithms.md#01-streams-and-sketches (right in JupyterLab
    and on GitHub); served at /lessons/NN the same link must go to
    /docs/algorithms#01-streams-and-sketches, and the anchor must be a heading's id there (a
    lesson's symbols cell links every symbol to its section)."""
    from explorer.dashboard.references import render_docs, render_lesson

    ids = set(re.findall(r' id="([^"]+)"', render_docs()))
    lessons = sorted({stem for reference in REFERENCES.values() for stem, _ in reference.lessons})
    checked = 0
    for stem in lessons:
        hrefs = re.findall(r'href="([^"]*)"', render_lesson(stem))
        assert not [h for h in hrefs if "algorithms.md" in h], f"{stem}: a repository path is served as a link"
        for href in hrefs:
            if href.startswith("/docs/algorithms#"):
                # percent-encoded (34-%CE%BC-and-%CE%B7 for 3.4 μ and η): browsers decode it
                assert unquote(href.split("#", 1)[1]) in ids, f"{stem}: {href} names no heading"
                checked += 1
    assert checked >= len(lessons)  # every lesson links its symbols to the docs
