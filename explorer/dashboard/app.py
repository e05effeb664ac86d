"""The dashboard frame: one session's settings, transport and pages, laid out in a template.

:class:`Dashboard` is the per-session state (nothing here is module-level and mutable):
the shared :class:`~.settings.Settings`, one :class:`~.transport.Transport`, and the
pages of :data:`PAGES`, each built on first visit. It routes a settings change to the
active page (structural: restart; hot: ``apply_hot``) and a page's own restart option
to the transport (or, for a page not shown, to its next visit), keeps every value in the URL
(``sync_url``), reads uploads, and shows notes and errors as alerts, never tracebacks.
:func:`create_app` builds the servable template for one session.

A page that fails is reported, never left broken: a failed step stops play at the last
row learned (:class:`~.transport.Transport`); a settings change the active page cannot
run on is undone (the page keeps its stream: its restart is all or nothing); a page that
cannot open on the current data set opens on the default one. An upload is parsed in a
worker thread (:meth:`Dashboard.upload_in_background`), so that the server goes on
answering this session and the others while it reads; in the browser (Pyodide, where
``sys.platform == "emscripten"`` and there are no threads) it is parsed in place.
"""

from __future__ import annotations

import asyncio
import json
import sys
from urllib.parse import parse_qsl, urlencode

import panel as pn
import param

from .layout import layout
from .memory import release_soon
from .page import Page
from .pages.adagrad import AdaGradPage
from .pages.fm import FactorizationPage
from .pages.newton import NewtonPage
from .pages.pca import AdaptivePCAPage
from .pages.sketching import SketchingPage
from .predict import Commitments
from .settings import DEFAULT_DATASET, UPLOAD, URL_NAMES, Settings, apply_query, clean_query
from .transport import Transport, reason
from .upload import UploadedData, check_size, parse_upload

__all__ = ["Dashboard", "create_app", "PAGES", "BROWSER_NOTE", "platform_notes"]

PAGES: tuple[type[Page], ...] = (SketchingPage, NewtonPage, AdaGradPage, AdaptivePCAPage,
                                 FactorizationPage)
"""The pages, in tab order; a new algorithm family appends its Page class here."""


class Dashboard(param.Parameterized):
    """One browser session: settings, transport, pages and the messages shown to the user."""

    page = param.Selector(objects=[cls.key for cls in PAGES], default=PAGES[0].key,
                          doc="The active page (its key goes in the URL as ?page=).")
    messages = param.List(default=[], doc="URL and upload problems, shown as alerts.")
    notes = param.List(default=[], doc="The active page's notes on the current settings.")
    uses_changed = param.Event(doc="The active page changed which settings it uses (the sidebar re-labels).")

    def __init__(self, pages: tuple[type[Page], ...] = PAGES, **params):
        super().__init__(**params)
        self.param.page.objects = [cls.key for cls in pages]  # this instance's copy only
        self.page = pages[0].key
        self.settings = Settings()
        self.page_classes = tuple(pages)
        self._classes = {cls.key: cls for cls in pages}
        self.pages: dict[str, Page] = {}
        self._stale: set[str] = set()
        self._location = None
        self._synced: list[tuple[param.Parameterized, dict[str, str]]] = []
        self.transport = Transport(self._page(self.page))
        self.transport.param.watch(self._page_failed, "failure")
        self._undoing = False  # settings being set back after a failure
        self._uploads = 0  # uploads received: only the latest one's parse is used
        self._show_notes()
        self.settings.param.watch(self._settings_changed, [*URL_NAMES, "upload"])
        self.param.watch(self._page_changed, "page")
        self.prediction = Commitments.of(self)  # each page's prediction, the active one's in the URL

    @property
    def active(self) -> Page:
        return self._page(self.page)

    def _page(self, key: str) -> Page:
        if key not in self.pages:
            self.pages[key] = page = self._classes[key](self.settings)
            page.param.watch(lambda event: self._show_notes(), "notes")
            page.param.watch(lambda event: self._uses_changed(page), "uses_changed")
            page.on_restart = lambda: self._restart(page)
            if self._location is not None:
                # Panel's Location.sync sets *every* synced value from the query, ``page``
                # too, so the query must name the page shown now. It may not yet: on a tab
                # click the first watchers of ``page`` (the intro's pn.bind) build the page
                # before Panel's own watcher writes the new page into the URL, and the click
                # was undone halfway (the body lagged one click behind).
                self._location.update_query(page=self.page)
                self._sync_page(page)
        return self.pages[key]

    def _show_notes(self) -> None:
        self.notes = [*(self.pages[self.page].notes if self.page in self.pages else ()), *platform_notes()]

    # -- routing changes --------------------------------------------------------------------
    def _restart(self, page: Page) -> bool:
        """A page's own restart option changed: restart it through the transport if it is
        shown (False if it cannot run on the new option: the page sets it back)."""
        if self.transport.page is page:
            return self.transport.reset()
        self._stale.add(page.key)
        return True

    def _page_failed(self, event) -> None:
        if event.new not in self.messages:
            self.messages = [*self.messages, event.new]

    def _uses_changed(self, page: Page) -> None:
        if self.pages.get(self.page) is page:
            self.param.trigger("uses_changed")

    def _settings_changed(self, *events) -> None:
        names = {event.name for event in events}
        if self.settings.dataset == UPLOAD and self.settings.upload is None:
            old = next((e.old for e in events if e.name == "dataset"), UPLOAD)
            self.settings.dataset = DEFAULT_DATASET if old == UPLOAD else old  # re-enters here
            self.messages = ["There is no uploaded file in this session (an upload is not part of "
                             "a shared link): upload one below, then choose 'your upload'."]
            return
        if self._undoing:  # setting back a change that failed
            return
        self.messages = []  # the user acted: earlier complaints are answered
        self._stale |= set(self.pages) - {self.page}
        page = self.active
        if names & (set(page.uses) - set(page.hot)) or "upload" in names:
            if not self.transport.reset():  # the page kept its stream: the settings follow it
                self._set_back(events)
        elif not self.transport.apply_hot(sorted(names & set(page.hot))):
            self._set_back(events)
            self.transport.reset()  # the page may hold part of the change: start again

    def _set_back(self, events) -> None:
        """Undo a settings change the active page could not run on, and say so."""
        self._undoing = True
        try:
            self.settings.param.update({event.name: event.old for event in events})
        finally:
            self._undoing = False
        self.settings.stream()  # the restored settings' stream (and its fixed_d) again
        undone = ", ".join(f"{event.name} = {event.old}" for event in events if event.name != "upload")
        self.messages = [*self.messages, f"Back to {undone or 'the previous data'}."]

    def _page_changed(self, event) -> None:
        self.transport.page = self._open(event.new)
        self._show_notes()

    def _open(self, key: str) -> Page:
        """Page ``key``, built or restarted on the current settings; a page that cannot run
        on the data set opens on the default one (the others restart on it when shown)."""
        try:
            page = self._page(key)
            if key in self._stale:
                page.reset()
                self._stale.discard(key)
            return page
        except Exception as error:
            if self.settings.dataset == DEFAULT_DATASET:
                raise  # no data set to fall back on: a bug of the page
            failed = (f"{self._classes[key].title} cannot run on '{self.settings.dataset}': "
                      f"{reason(error)}. It shows '{DEFAULT_DATASET}' instead.")
        self._undoing = True  # the other pages restart on it when shown
        try:
            self.settings.dataset = DEFAULT_DATASET
        finally:
            self._undoing = False
        self._stale |= set(self.pages)
        page = self._open(key)
        self.messages = [*self.messages, failed]
        return page

    def upload(self, filename: str, content: bytes) -> bool:
        """Parse an uploaded file; on success stream it, else explain why not. Never raises."""
        return self._use_upload(_read_upload(filename, content))

    async def upload_in_background(self, filename: str, content: bytes) -> bool | None:
        """:meth:`upload`, parsing in a worker thread while the server answers other events
        (the layout's file input calls this). Of uploads that overlap, the last one wins:
        an earlier one returns None (neither used nor refused). In the browser (Pyodide:
        ``sys.platform == "emscripten"``), which has no threads, the parse runs in place."""
        self._uploads += 1
        ticket = self._uploads
        if sys.platform == "emscripten":
            result = _read_upload(filename, content)
        else:
            result = await asyncio.to_thread(_read_upload, filename, content)
        return self._use_upload(result) if ticket == self._uploads else None

    def refuse_upload(self, filename: str, n_bytes: int) -> None:
        """The browser refused a file by its size, before reading it (nothing was sent):
        say why. The data streamed so far stays; a parse still running is dropped."""
        self._uploads += 1
        try:
            check_size(filename, n_bytes)
        except ValueError as error:
            self._use_upload(f"Upload refused: {error}")

    def _use_upload(self, result: UploadedData | str) -> bool:
        """Stream parsed data (unless the active page cannot run on it), or show why not."""
        if isinstance(result, str):
            self.messages = [result]
            return False
        self.messages = []
        with param.parameterized.batch_call_watchers(self.settings):
            self.settings.upload = result
            self.settings.dataset = UPLOAD
        return self.settings.upload is result

    def close(self) -> None:
        """The session is gone: stop playing and let go of the pages' arrays."""
        self.transport.stop()
        self.pages.clear()

    # -- the URL ----------------------------------------------------------------------------
    def sync_url(self, location, problems: tuple[str, ...] = ()) -> None:
        """Keep settings, page, page options, predict, t and speed in ``location``'s query, both ways.

        Settings come first (they may restart the stream), t last (it seeks). Every value
        stays in JSON (``learners=["RFD-SON"]``, ``fast=true``): see :func:`keep_json`. A
        value Panel's parser cannot read, or of the wrong kind (``seed=true``), is dropped
        first, with a message naming the key (:func:`~.settings.clean_query`); ``problems``
        are such messages from an earlier cleaning (:func:`clean_request_query`).
        """
        keep_json(location)
        self._location = location
        problems = [*problems, *self._clean_search(location)]  # the query as it is now
        asked_t = location.query_params.get("t")  # before the sync rewrites the query
        clean_first(location, lambda event: self.add_messages(self._clean_search(location)))
        self._sync(self.settings, URL_NAMES)
        self._sync(self, ("page",))
        for page in list(self.pages.values()):
            self._sync_page(page)
        self._sync(self.prediction, ("predict",))  # after page: its range is the page's choices
        self._sync(self.transport, {"shared_t": "t", "speed": "speed"})
        self.add_messages([*problems, *self._past_the_end(asked_t)])  # after: a setting the
        # link changed clears the messages

    def _past_the_end(self, asked) -> list[str]:
        """A message if a link's ``t`` (``asked``) lies past the stream's last row (the page
        shows the last row instead)."""
        page = self.transport.page
        if (isinstance(asked, (int, float)) and not isinstance(asked, bool)
                and asked > page.n_rows == page.t):
            return [f"URL: t = {asked:g} is past the end of the stream ({page.n_rows} rows); "
                    f"showing t = {page.n_rows}."]
        return []

    def url_parameters(self) -> dict[str, list[param.Parameter]]:
        """Every key a link may carry and the parameters it may set: the settings, ``page``, every
        page's options (before the page is built), ``predict``, ``t`` and ``speed``."""
        parameters = {**{name: [self.settings.param[name]] for name in URL_NAMES}, "page": [self.param.page]}
        for cls in self.page_classes:
            for name in cls.param:
                if name not in Page.param and name != "name":
                    parameters.setdefault(name, []).append(cls.param[name])
        parameters.update(predict=[self.prediction.param.predict], t=[self.transport.param.shared_t],
                          speed=[self.transport.param.speed])
        return parameters

    def _clean_search(self, location) -> list[str]:
        """``location``'s query (a link, or what the browser's address bar sends) cleaned
        before Panel parses it: the dropped values gone, :func:`~.settings.clean_query`'s
        messages returned."""
        search, problems = clean_query(location.search, self.url_parameters())
        if search != location.search:
            location.search = search
        return problems

    def add_messages(self, texts: list[str]) -> None:
        """Show ``texts`` in the problems' alert, each once."""
        new = [text for text in dict.fromkeys(texts) if text not in self.messages]
        if new:
            self.messages = [*self.messages, *new]

    def _sync_page(self, page: Page) -> None:
        self._sync(page, [name for name in page.param if name not in Page.param and name != "name"])

    def _sync(self, target: param.Parameterized, names) -> None:
        names = names if isinstance(names, dict) else {name: name for name in names}

        def refused(values):
            self.add_messages(apply_query(target, values, names))  # may clear messages: read them after
        self._synced.append((target, names))
        self._location.sync(target, names, on_error=refused)

    def url_query(self) -> dict[str, str]:
        """Every synced value as the URL shows it (the browser's first URL has none of the defaults)."""
        query = {}
        for target, names in self._synced:
            for name, key in names.items():
                value = target.param[name].serialize(getattr(target, name))
                query[key] = value if isinstance(value, str) else json.dumps(value)
        return query


def clean_first(location, clean) -> None:
    """Call ``clean(event)`` on each new ``location.search`` before Panel's Location parses it.

    param calls a parameter's watchers by precedence, then in the order they were set up,
    and refuses a negative precedence from users; Location set up its parser (the watcher
    of ``search`` alone) when it was built. So that watcher is taken off and set up again
    after ``clean``, unchanged, through param's public ``watchers``/``unwatch``/``watch``.
    """
    parsers = [watcher for watcher in location.param.watchers.get("search", {}).get("value", [])
               if tuple(watcher.parameter_names) == ("search",)]
    for watcher in parsers:
        location.param.unwatch(watcher)
    location.param.watch(clean, "search")
    for watcher in parsers:
        location.param.watch(watcher.fn, "search", onlychanged=watcher.onlychanged,
                             queued=watcher.queued, precedence=watcher.precedence)


def keep_json(location) -> None:
    """Make ``location.update_query`` keep the other values of the query as they are written.

    Panel's (1.9) parses the whole query (``parse_query``: JSON into Python objects) and
    writes it back with ``urlencode``, i.e. ``str()``: after the first change a link's
    ``learners=["RFD-SON"]`` became ``['RFD-SON']`` and ``fast=true`` ``True``.
    Here the query's strings are kept and a new value goes in as JSON (as Panel serializes
    it for ``sync``).
    """
    def update_query(**values) -> None:
        query = dict(parse_qsl(location.search[1:], keep_blank_values=True))
        query.update({key: value if isinstance(value, str) else json.dumps(value)
                      for key, value in values.items()})
        location.search = "?" + urlencode(query)
    location.update_query = update_query


def clean_request_query(parameters: dict) -> list[str]:
    """Clean this session's request address before Panel builds ``pn.state.location`` from
    it (:func:`~.settings.clean_query`); return the messages for the dropped values.

    Panel parses the query as it builds the location: a value of 4301 digits raised there
    and the page was an HTTP 500. The cleaned address is set as the request's ``uri``
    (Bokeh's request proxy then answers with it; the request itself is untouched). Outside
    a served session there is no request: nothing to do.
    """
    curdoc = pn.state.curdoc
    context = curdoc.session_context if curdoc is not None else None
    request = getattr(context, "request", None)
    uri = getattr(request, "uri", None)
    if not isinstance(uri, str) or "?" not in uri:
        return []
    path, _, query = uri.partition("?")
    search, messages = clean_query("?" + query, parameters)
    if search != "?" + query:
        request.uri = path + search
    return messages


def _read_upload(filename: str, content: bytes) -> UploadedData | str:
    """The parsed file, or the message saying why it was refused (safe to run in a thread)."""
    try:
        return parse_upload(filename, content)
    except ValueError as error:
        return f"Upload refused: {error}"
    except Exception as error:  # a parser bug must not reach the user as a traceback
        return f"Upload refused: {filename} could not be read ({type(error).__name__})."


BROWSER_NOTE = ("This dashboard runs in your browser (Pyodide): an upload is read in this tab, "
                "which waits until it is read.")
"""What differs in the static site's dashboard, shown there below the page's own notes."""


def platform_notes() -> list[str]:
    """The notes the page shows on this platform: :data:`BROWSER_NOTE` in Pyodide
    (``sys.platform == "emscripten"``), none elsewhere."""
    return [BROWSER_NOTE] if sys.platform == "emscripten" else []


def create_app(pages: tuple[type[Page], ...] = PAGES) -> pn.template.BaseTemplate:
    """Build one session's dashboard: a fresh :class:`Dashboard` in a template (a factory for ``pn.serve``)."""
    pn.extension("plotly", notifications=False)
    app = Dashboard(pages)
    problems = clean_request_query(app.url_parameters())  # before Panel reads the query
    location = pn.state.location
    if location is not None:
        app.sync_url(location, tuple(problems))
        pn.state.onload(lambda: location.update_query(**app.url_query()))
    if pn.state.curdoc is not None and pn.state.curdoc.session_context is not None:
        def closed(session_context) -> None:
            app.close()
            release_soon()  # the freed memory back to the OS, once Bokeh has let go of it
        pn.state.on_session_destroyed(closed)
    return layout(app)
