"""Widgets and template of the dashboard: everything here only displays a :class:`~.app.Dashboard`.

The sidebar holds the shared settings (↻ restarts the stream, ⚡ applies mid-stream, as
the active page declares), the upload, a note on sharing and the active view as a Python
script and as CSV (:func:`downloads`, :mod:`.export`); the main area holds the
links to the active page's lessons and docs sections (:func:`reference_links`), the
transport bar (Reset, Back, Play, Pause, Step, speed, ``t = N of n rows``; the keyboard
shortcuts of :mod:`.keyboard`, a line naming them and the names of :mod:`.aria`), the alerts
(URL and upload problems, the page's notes), one tab per page (its symbols defined where
they appear and listed above it: :mod:`.symbols`) and a live region that reads out the
active page's latest step (:func:`live_summary`).
"""

from __future__ import annotations

import base64
import functools
import html
import inspect
import re
import time
from collections.abc import Callable

import panel as pn
import param
from panel.custom import JSComponent

from .aria import ANNOUNCE_SECONDS, AriaNames, LiveSummary
from .controls import bind, grid_options
from .export import csv, filename, script
from .keyboard import SHORTCUTS_HELP, Keyboard
from .cells import help_text, row
from .references import reference_links
from .settings import ALPHA0_CHOICES, ETA_CHOICES, URL_NAMES, Settings
from .challenges import ChallengesPanel
from .predict import PredictPanel
from .opened import OpenedUpdate
from .symbols import annotate, annotate_views, symbols_panel
from .transport import Transport
from .upload import FORMATS, MAX_BYTES, MAX_COLUMNS, MAX_ROWS

__all__ = ["layout", "label_of", "FrameClock", "FileUpload", "plain_text", "live_summary", "references",
           "downloads", "Download"]

LABELS = {"m": "m: sketch size", "alpha0": "α₀: initial regularizer", "eta": "η",
          "dataset": "data set", "n": "n: stream length", "d": "d: dimension", "seed": "seed"}
HELP = {"eta": "What η is depends on the page, and its label says which (a step size, SON's "
               "curvature weight); a page that has none greys it out.",
        "d": "The dimension of the synthetic streams; real data sets and uploads fix their own."}


def label_of(name: str, page) -> str:
    """The sidebar label of the shared setting ``name`` on ``page``, without its ↻/⚡ mark:
    η says what it is on this page (:attr:`~.page.Page.eta_meaning`) or that it is unused.

    >>> from explorer.dashboard.pages.newton import NewtonPage
    >>> from explorer.dashboard.pages.pca import AdaptivePCAPage
    >>> label_of("eta", NewtonPage), label_of("eta", AdaptivePCAPage), label_of("m", NewtonPage)
    ('η: SON curvature weight', 'η: not used on this page', 'm: sketch size')
    """
    if name != "eta":
        return LABELS[name]
    return f"η: {page.eta_meaning}" if "eta" in page.uses else "η: not used on this page"


def layout(app) -> pn.template.BootstrapTemplate:
    """The template for one session of ``app`` (a :class:`~.app.Dashboard`)."""
    template = pn.template.BootstrapTemplate(title="Sketch Explorer", sidebar_width=330,
                                             header_background="#1f3b57")
    template.sidebar.extend(_sidebar(app))
    transport, alerts, tabs = _transport_bar(app.transport), _alerts(app), _tabs(app)
    template.main.append(pn.Column(
        pn.pane.Markdown(pn.bind(lambda key: annotate(app.active.intro, key), app.param.page),
                         margin=(0, 10)),
        references(app), transport, alerts, tabs, live_summary(app), sizing_mode="stretch_width"))
    return template


def references(app) -> pn.pane.HTML:
    """The active page's lessons and docs sections as links (:mod:`.references`), each opening
    in a new tab so that the dashboard's session stays; nothing when there are none."""
    def links(key: str) -> str:
        items = "".join(f'<li><a href="{html.escape(href)}" target="_blank" rel="noopener">'
                        f"{html.escape(text)}</a></li>" for text, href in reference_links(key))
        return (f'<nav aria-label="Learn more about this page"><strong>Learn more:</strong>'
                f'<ul class="references">{items}</ul></nav>') if items else ""
    return pn.pane.HTML(pn.bind(links, app.param.page), margin=(0, 10), sizing_mode="stretch_width",
                        stylesheets=[REFERENCES_INLINE])


REFERENCES_INLINE = ("nav { display: flex; flex-wrap: wrap; align-items: baseline; column-gap: 0.6em; } "
                     "ul.references { flex: 1; display: flex; flex-wrap: wrap; column-gap: 1.4em; "
                     "list-style: none; margin: 0; padding: 0; } "
                     "a { color: inherit; text-decoration: underline; }")
"""The links side by side, a whole link moving to the next line when it does not fit; in the
text's colour, underlined (the browser's link blue is under 4.5:1 on the dark theme)."""


def live_summary(app) -> LiveSummary:
    """The polite live region saying the active page's ``t`` and its summary line (its
    ``summary`` pane, the "Latest:" line): when either changes, on Pause and on a page change,
    and while playing at most once every ``ANNOUNCE_SECONDS`` (the browser holds it to
    that rate too). Made after the tabs, so that a new page's views exist when it speaks."""
    live, watched, said = LiveSummary(), set(), [-float("inf")]

    def say(*_, now: bool = True) -> None:
        page = app.active
        summary = getattr(page, "summary", None)
        if summary is None or (not now and time.monotonic() - said[0] < ANNOUNCE_SECONDS):
            return
        said[0] = time.monotonic()
        line = re.sub(r"\*\*|\\", "", str(summary.object))
        live.text = f"{page.title}, t = {page.t} of {page.n_rows} rows. {line}"

    def follow(*_) -> None:
        summary = getattr(app.active, "summary", None)
        if summary is not None and id(summary) not in watched:
            watched.add(id(summary))
            summary.param.watch(lambda *_: say(now=not app.transport.playing), "object")
        say()
    follow()
    app.param.watch(follow, "page")
    app.transport.param.watch(lambda event: say() if not event.new else None, "playing")
    app.transport.param.watch(lambda *_: say(now=not app.transport.playing), ["t", "n_rows"])
    return live


def _transport_bar(transport: Transport) -> pn.Column:
    actions = {"Reset": transport.reset, "Back": transport.back, "Play": transport.play,
               "Pause": transport.pause, "Step": transport.step}
    kinds = {"Play": "success", "Pause": "warning", "Step": "primary"}
    buttons = {}
    for label, action in actions.items():
        buttons[label] = pn.widgets.Button(label=label, color=kinds.get(label, "default"),
                                           width=75, align="center")
        buttons[label].on_click(lambda event, action=action: action())

    def playing(*_):  # Play is off while playing and at the end of the stream
        buttons["Play"].disabled = transport.playing or transport.t >= transport.n_rows
        buttons["Pause"].disabled = not transport.playing
    playing()
    transport.param.watch(playing, ["playing", "t", "n_rows"])
    speed = pn.widgets.Select.from_param(transport.param.speed, label="speed (rows / s)", width=130)
    clock = FrameClock()
    clock.param.watch(lambda event: setattr(transport, "frames_shown", event.new), "shown")
    transport.param.watch(lambda event: setattr(clock, "sent", event.new), "frames_sent")
    transport.paced = True
    counter = pn.pane.Markdown(pn.bind(lambda t, n: f"**t = {t}** of {n} rows", transport.param.t,
                                       transport.param.n_rows),
                               styles={"font-size": "1.25em"}, align="center", margin=(0, 15))
    status = help_text(transport.param.status, css_class="status-text", align="center")
    keys = Keyboard({"toggle": lambda: transport.pause() if transport.playing else transport.play(),
                     "step": transport.step, "back": transport.back})
    shortcuts = help_text(SHORTCUTS_HELP, styles={"font-size": "0.85em"}, margin=(0, 10))
    return pn.Column(row(*buttons.values(), speed, counter, status, clock, keys, AriaNames()),
                     shortcuts, sizing_mode="stretch_width")


class FrameClock(JSComponent):
    """Tells the server which frame the browser has painted (``sent`` in, ``shown`` out).

    The browser applies a server message in order, so when ``sent`` changes the plots of
    that tick have their new data; they draw it in the next animation frame, and a quick
    draw (``live.PlotlyView``) finishes in a later one: the frame counts as shown once the
    draws under way (``window.explorerDrawing``) are done and a frame was painted after them.
    """

    sent = param.Integer(default=0)
    shown = param.Integer(default=0)

    # Panel counts every change a browser sends in its one server-wide busy state, and each
    # change of that state updates the busy indicator of every session: two indicator
    # updates for every frame of every session playing.
    _busy__ignore = ["shown"]

    _esm = """
    export function render({ model }) {
      model.on("sent", () => {
        const frame = model.sent
        requestAnimationFrame(async () => {
          await Promise.all(window.explorerDrawing || [])
          requestAnimationFrame(() => setTimeout(() => { model.shown = frame }, 0))
        })
      })
      return document.createElement("span")
    }
    """


class FileUpload(JSComponent):
    """A file input that sends a file to the server only if it has at most ``max_bytes``.

    The browser checks the size before it reads the file: a file too large is never read
    nor sent, the server is told only its name and size (``on_refused(name, n_bytes)``)
    and the box is cleared. Panel's ``FileInput`` (1.9) has no size limit: it read a 38 MB
    file and sent it base64-encoded (51 MB) in one websocket message, over the server's
    limit, which closed the socket and left the page dead. A file small enough
    arrives as ``on_file(name, content)`` (a coroutine function is scheduled); when it
    returns False (the file was refused) the box is cleared too, so it never shows a file
    whose data is not the data playing.
    """

    accept = param.String(default="", doc="Comma-separated file extensions offered.")
    max_bytes = param.Integer(default=MAX_BYTES, bounds=(0, None), doc="Largest file sent.")
    cleared = param.Integer(default=0, doc="Incremented to clear the box (a refused file).")

    _stylesheets = [""":host { display: block; }
    input { box-sizing: border-box; width: 100%; padding: 6px; font: inherit;
            border: 1px solid #ced4da; border-radius: 4px; background: white; }"""]
    _esm = """
    export function render({ model }) {
      const input = document.createElement("input")
      input.type = "file"
      input.accept = model.accept
      input.setAttribute("aria-label", "Your data: a file to stream")
      model.on("cleared", () => { input.value = "" })
      input.addEventListener("change", () => {
        const file = input.files[0]
        if (file === undefined) return
        if (file.size > model.max_bytes) {
          model.send_msg({kind: "refused", name: file.name, size: file.size})
          input.value = ""
          return
        }
        const reader = new FileReader()
        reader.onload = () => {
          const url = reader.result  // data:<type>;base64,<data>
          model.send_msg({kind: "file", name: file.name, data: url.slice(url.indexOf(",") + 1)})
        }
        reader.readAsDataURL(file)
      })
      return input
    }
    """

    def __init__(self, on_file: Callable, on_refused: Callable, **params):
        super().__init__(**params)
        self._on_file, self._on_refused = on_file, on_refused

    def _handle_msg(self, msg) -> None:
        """A message of the browser's script (data from the user: its fields are checked)."""
        if not isinstance(msg, dict) or not isinstance(msg.get("name"), str):
            return
        if msg.get("kind") == "refused" and isinstance(msg.get("size"), (int, float)):
            self._on_refused(msg["name"], int(msg["size"]))
        elif msg.get("kind") == "file" and isinstance(msg.get("data"), str):
            try:
                content = base64.b64decode(msg["data"], validate=True)
            except ValueError:  # not from this script
                return
            pn.state.execute(functools.partial(self._receive, msg["name"], content))

    async def _receive(self, name: str, content: bytes) -> None:
        accepted = self._on_file(name, content)
        if inspect.isawaitable(accepted):
            accepted = await accepted
        if accepted is False:
            self.cleared += 1


_MARKDOWN_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")  # every ASCII punctuation character


def plain_text(text) -> str:
    """``text`` as Markdown source that renders exactly as the text: every ASCII punctuation
    character backslash-escaped (CommonMark makes each one literal, and the renderer then
    escapes ``<``, ``>`` and ``&`` for HTML).

    Alerts quote what the user typed or uploaded (URL values, file names, CSV cells), so
    they are data, never markup: ``?m=<script>...`` shows those characters and runs nothing.

    >>> print(plain_text("m = <b>1</b>"))
    m \\= \\<b\\>1\\<\\/b\\>
    """
    return _MARKDOWN_PUNCTUATION.sub(r"\\\1", str(text))


def _alerts(app) -> pn.Column:
    """Two alert boxes, problems (red) and the page's notes (blue), one paragraph a message.

    The boxes stay and only their text changes: replacing the panes themselves while the
    page loads (a bad link's complaints arrive then) left the browser out of step, and
    every later message, an upload's refusal among them, was never shown.
    """
    errors = pn.pane.Alert("", alert_type="danger", margin=(2, 10), visible=False,
                           sizing_mode="stretch_width")
    notes = pn.pane.Alert("", alert_type="info", margin=(2, 10), visible=False,
                          sizing_mode="stretch_width",
                          stylesheets=[INFO_TEXT] if pn.config.theme == "default" else [])

    def render(*_):
        for pane, texts in ((errors, app.messages), (notes, app.notes)):
            pane.object = "\n\n".join(plain_text(text) for text in texts)
            pane.visible = bool(texts)
    render()
    app.param.watch(render, ["messages", "notes"])
    return pn.Column(errors, notes, sizing_mode="stretch_width")


INFO_TEXT = ":host(.alert-info) { color: #055160; }"
"""The notes' text colour on the light theme: 7.7:1 on the info background (Bootstrap's
own #087990 has 4.3:1, under WCAG AA's 4.5:1 for small text)."""


def _tabs(app) -> pn.Tabs:
    keys = list(app.param.page.objects)
    bodies = {key: pn.Column(sizing_mode="stretch_width") for key in keys}
    titles = {cls.key: cls.title for cls in app.page_classes}

    def show(key):
        if not bodies[key].objects:
            # Built without a design of their own, like the panes made before the template
            # rendered: the template then styles them as it styled those. Made after, they
            # would default to the session's design, applied *isolated* (Bootstrap's whole
            # stylesheet inside each pane: 24 px headings, a checkbox over a title).
            with pn.config.set(design=None):
                views = app.active.views
                annotate_views(app.active)  # each symbol defined where it appears
                symbols = symbols_panel(app.active)
                opened = OpenedUpdate(app.active).panel()  # the next round, taken apart
                challenges = ChallengesPanel(app.active).panel()  # tasks with a check on the page
                # a question answered before playing, revealed at the end (in the URL: ?predict=)
                predict = PredictPanel(app.active, app.prediction).panel()
            bodies[key].objects = [symbols, views, opened, challenges, predict]
    show(app.page)
    tabs = pn.Tabs(*[(titles[key], bodies[key]) for key in keys], active=keys.index(app.page),
                   sizing_mode="stretch_width", dynamic=False, stylesheets=[TAB_HEADERS_WRAP])
    app.param.watch(lambda event: show(event.new), "page")  # the page's views, then its tab
    return bind(tabs, app, "page", attribute="active", read=keys.__getitem__,
                follow=lambda key: {"active": keys.index(key)})


TAB_HEADERS_WRAP = ".bk-headers-wrapper { flex-wrap: wrap; }"
"""The tab titles go on two lines when they do not fit (the fifth was off-screen at 1024 px)."""


def _sidebar(app) -> list:
    settings = app.settings
    widgets = {
        "m": pn.widgets.IntSlider(start=2, end=50),
        "alpha0": _choice_slider(settings, "alpha0", ALPHA0_CHOICES),
        "eta": _choice_slider(settings, "eta", ETA_CHOICES),
        "dataset": pn.widgets.Select(options=list(settings.param.dataset.objects)),
        "n": pn.widgets.IntSlider(start=50, end=5000, step=50),
        "d": pn.widgets.IntSlider(start=2, end=MAX_COLUMNS),
        "seed": pn.widgets.IntInput(start=0, end=2**31 - 1),
    }
    for name in ("m", "dataset", "n", "d", "seed"):
        widgets[name].param.update(value=getattr(settings, name), sizing_mode="stretch_width")
        # n and d show the streamed shape (_show_stream_shape), not always the setting
        bind(widgets[name], settings, name, throttled=name in ("m", "n", "d"),
             shown=name not in ("n", "d"))

    def label(*_):
        page = app.active
        for name in URL_NAMES:
            mark = "" if name not in page.uses else (" ⚡" if name in page.hot else " ↻")
            widgets[name].label = label_of(name, page) + mark
            # a data set that fixes d only matters to pages that read the data set
            widgets[name].disabled = name not in page.uses or (
                name == "d" and settings.fixed_d and "dataset" in page.uses)
    label()
    app.param.watch(label, ["page", "uses_changed"])
    settings.param.watch(label, "fixed_d")
    small = {"font-size": "0.9em"}
    shape = help_text("", styles=small)
    _show_stream_shape(app, widgets["n"], widgets["d"], shape)
    new_data = pn.widgets.Button(label="New data (next seed)", sizing_mode="stretch_width")
    new_data.on_click(lambda event: setattr(settings, "seed", (settings.seed + 1) % 2**31))
    # parsed in a thread (the server answers other events meanwhile); too large: never sent
    upload = FileUpload(on_file=app.upload_in_background, on_refused=app.refuse_upload,
                        accept=",".join(FORMATS), max_bytes=MAX_BYTES, sizing_mode="stretch_width")
    heading = pn.pane.Markdown

    def note(text):  # a small grey explanation line
        return help_text(text, styles=small)
    return [
        heading("### Sketch"), widgets["m"], widgets["alpha0"], widgets["eta"], note(HELP["eta"]),
        heading("### Stream"), widgets["dataset"], widgets["n"], widgets["d"], shape, note(HELP["d"]),
        widgets["seed"], new_data,
        note("↻ restarts the stream · ⚡ applies at once, mid-stream"),
        heading("### Your data"), upload,
        note(f"CSV (optional header; a column named y/label/target is the label), .npz/.npy "
             f"(array X) or LIBSVM; at most {MAX_BYTES // 2**20} MB, {MAX_ROWS} rows, "
             f"{MAX_COLUMNS} columns. Nothing in the file is executed or unpickled."),
        heading("### Share"),
        note("Every setting, the page and t are in the address bar: copy the link to show "
             "someone exactly this view."),
        *downloads(app),
        note("The .py file rebuilds this page's stream and algorithms with the explorer package "
             "and prints the numbers its curves show at t; the .csv file holds the curves."),
    ]


def downloads(app) -> list["Download"]:
    """Two buttons saving the active page at its row t: as a Python script
    (:func:`.export.script`) and its curves as CSV (:func:`.export.csv`), each file written
    when its button is pressed (nothing is sent while the stream plays), named
    ``explorer-<page>-t<t>``."""
    return [Download(lambda: (filename(app.active, "py"), script(app.active)), mime="text/x-python",
                     label="Download as Python (.py)", sizing_mode="stretch_width", margin=(5, 10)),
            Download(lambda: (filename(app.active, "csv"), csv(app.active)), mime="text/csv",
                     label="Download curves (.csv)", sizing_mode="stretch_width", margin=(5, 10))]


class Download(JSComponent):
    """A button that saves a file the server writes when it is pressed: ``write()`` gives
    ``(file name, text)``.

    A real ``<button>`` (Enter and Space press it; its text is its name for screen
    readers). Panel's ``FileDownload`` (1.9) listens for clicks on a link inside its
    button: a click with the mouse downloads, Enter on the focused button did nothing.
    """

    label = param.String(default="Download", doc="The button's text.")
    mime = param.String(default="text/plain", doc="The file's media type.")

    _stylesheets = [""":host { display: block; }
    button { width: 100%; padding: 6px 12px; font: inherit; border: 1px solid #ced4da;
             border-radius: 4px; background: white; color: #212529; cursor: pointer; }
    button:hover { background: #e9ecef; }
    button:focus-visible { outline: 3px solid #1f3b57; outline-offset: 1px; }"""]
    _esm = """
    export function render({ model, el }) {
      const button = document.createElement("button")
      button.type = "button"
      button.textContent = model.label
      model.on("label", () => { button.textContent = model.label })
      button.addEventListener("click", () => model.send_msg({kind: "write"}))
      model.on("msg:custom", msg => {
        const link = document.createElement("a")
        link.href = URL.createObjectURL(new Blob([msg.text], {type: model.mime}))
        link.download = msg.name
        el.appendChild(link)
        link.click()
        link.remove()
        setTimeout(() => URL.revokeObjectURL(link.href), 10000)
      })
      return button
    }
    """

    def __init__(self, write: Callable[[], tuple[str, str]], **params):
        super().__init__(**params)
        self.write = write

    def _handle_msg(self, msg) -> None:
        """The button was pressed (a message of the browser's script: only its kind is read)."""
        if isinstance(msg, dict) and msg.get("kind") == "write":
            name, text = self.write()
            self._send_msg({"name": name, "text": text})


def _show_stream_shape(app, n_widget, d_widget, shape: pn.pane.Markdown) -> None:
    """Keep the n and d sliders and the ``shape`` line on the rows actually streamed.

    A file or a real data set fixes its own shape: after an upload of 200 x 10 rows at
    n = 1000, d = 50 the sliders show n = 200 and d = 10 (the settings keep 1000 and 50,
    which a synthetic stream uses again). Only the displayed values change: the sliders
    act on release (``value_throttled``), so nothing is set back into the settings.
    """
    settings = app.settings

    def show(*_):
        rows, columns = settings.n, settings.d
        if "dataset" in app.active.uses:
            try:
                X, _ = settings.stream()  # cached: the page streams the same array
                rows, columns = X.shape
            except ValueError:
                pass
        n_widget.value = min(settings.n, rows)
        d_widget.value = columns if settings.fixed_d else settings.d
        shape.object = (f"Streaming **{rows}** rows × **{columns}** columns."
                        if "dataset" in app.active.uses else "")
    show()
    settings.param.watch(show, ["dataset", "n", "d", "seed", "upload", "fixed_d"])
    app.param.watch(show, ["page", "uses_changed"])
    n_widget.param.watch(show, "value_throttled")  # n past a file's rows: back to its rows


def _choice_slider(settings: Settings, name: str, choices) -> pn.widgets.DiscreteSlider:
    """A slider over meaningful values (0, 0.001, ..., 1000); a value off the grid is added to it."""
    value = float(getattr(settings, name))
    widget = pn.widgets.DiscreteSlider(label=LABELS[name], options=grid_options(choices, value),
                                       value=value, sizing_mode="stretch_width")
    return bind(widget, settings, name, throttled=True,
                follow=lambda new: {"options": grid_options(choices, new), "value": float(new)})
