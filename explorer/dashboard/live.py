"""Live Plotly figures: build a figure once, then send only the arrays that changed.

A :class:`LivePlot` keeps its ``plotly.graph_objects.Figure`` (validated, readable by the
page's tests) and mirrors it in the browser through :class:`PlotlyView`, a small
component that owns one Plotly graph div. An update sends the trace properties the
pages set (numpy arrays travel as binary buffers), the axis ranges when they changed
(:mod:`.ranges`: round numbers computed from the data) and, only when the page changed
it, the layout. The browser draws in the next animation frame, one draw at a time, so
updates that arrive faster than the browser paints are merged instead of queueing draws
nobody sees; a figure scrolled out of view is not drawn until it is back on screen. A
draw whose axes keep their ranges moves the traces only (``Plotly.animate`` without
redraw); any other is a whole ``Plotly.react``.

Why each of these (Panel's own Plotly pane, whole redraws, arrays one by one) was dropped,
and the play rates measured: ``benchmarks/dashboard_latency.py`` in benchmarks/README.md.
Each figure is a ``role=figure`` named by its text alternative (:func:`~.aria.describe`:
title, axes, latest values), renewed at most every ``ANNOUNCE_SECONDS`` while the stream plays.
Tick labels are drawn with ``ticklabeloverflow="allow"``: Plotly's default ("hide past
div") measures every label of every axis on every redraw, a quarter of ``Plotly.react`` here.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import panel as pn
import param
import plotly.graph_objects as go
from panel.custom import JSComponent
from plotly.basedatatypes import BasePlotlyType

from .aria import ANNOUNCE_SECONDS, describe
from .ranges import axis_ranges, ranged_axes

__all__ = ["LivePlot", "PlotlyView", "finite"]

_PLOTLY_CSS = (Path(pn.__file__).parent / "dist" / "css" / "models" / "plotly.css").read_text()

CONFIG = {"displaylogo": False, "responsive": True,
          "modeBarButtonsToRemove": ["select2d", "lasso2d", "autoScale2d"]}


def finite(values) -> np.ndarray:
    """A float array with inf and NaN turned into NaN (Plotly leaves a gap there)."""
    values = np.asarray(values, dtype=float)
    return np.where(np.isfinite(values), values, np.nan)


class PlotlyView(JSComponent):
    """One Plotly graph in the browser, drawn from its parameters.

    ``data`` holds the traces as built (Plotly JSON); ``values`` and ``arrays`` the
    properties set since, by trace index: all of them, so a view rendered late, or again,
    draws the current state (:meth:`trace_values` reads them back); ``layout`` the current
    layout, re-sent only when it changes. The numeric arrays travel packed in one buffer,
    each distinct array once: Bokeh sends every array as websocket frames of its own,
    and the sketching page's 44 arrays per update (14 of them the same t) were about 70
    frames. Plotly.js is the copy Panel serves for
    ``pn.extension("plotly")`` (plotly.js's partial bundle when installed, :mod:`.bundle`),
    and its stylesheet is Panel's, applied inside this component's shadow root.
    """

    data = param.List(default=[])
    values = param.Dict(default={}, doc=(
        "The properties set since the figure was built, by trace index, but numeric arrays "
        "({'3': {'name': 'FD'}})."))
    arrays = param.Dict(default={"numbers": np.zeros(0), "slices": {}}, doc=(
        "The numeric arrays set since, packed: 'numbers' (one float64 array, each distinct "
        "array once) and 'slices' ({'3': {'y': [start, stop]}})."))
    layout = param.Dict(default={})
    shapes = param.List(default=None, allow_None=True, doc=(
        "The notes on the figure (layout shapes, event_marks's) set since it was built, on "
        "top of the layout's; None: the layout's own. A change redraws the shapes alone."))
    config = param.Dict(default=CONFIG)
    ranges = param.Dict(default={}, doc=(
        "Axis ranges set on top of the layout ({'xaxis': [0, 150]}; None: autorange), "
        "the ones LivePlot computes from the data."))
    label = param.String(default="", doc="The figure in words: its aria-label (role figure).")
    quick = param.Boolean(default=False, doc=(
        "Whether every axis has a range (the layout's, or in ranges): then a change of the "
        "values alone moves the traces without redrawing axes and legend."))

    _stylesheets = [_PLOTLY_CSS]
    _esm = """
    const QUICK = {transition: {duration: 0}, frame: {duration: 0, redraw: false}, mode: "immediate"}
    export function render({ model, el }) {
      const graph = document.createElement("div")
      graph.style.width = "100%"
      graph.style.height = "100%"
      // a redraw measures text (getBoundingClientRect) between DOM writes: contained, each
      // forced layout and repaint stays inside this figure instead of the whole page
      graph.style.contain = "strict"
      const name = () => { graph.setAttribute("role", "figure"); graph.setAttribute("aria-label", model.label) }
      name()
      model.on("label", name)
      // new objects on every draw: Plotly.react keeps what it is given and diffs by identity
      const unpacked = i => {
        const {numbers, slices} = model.arrays, out = {}
        for (const [key, [start, stop]] of Object.entries(slices[i] || {}))
          out[key] = new Float64Array(numbers.buffer, numbers.byteOffset + 8 * start, stop - start)
        return out
      }
      const traces = () => model.data.map((trace, i) => ({...trace, ...model.values[i], ...unpacked(i)}))
      const layout = () => {
        const out = structuredClone(model.layout)
        if (model.shapes !== null) out.shapes = structuredClone(model.shapes)
        for (const [key, range] of Object.entries(model.ranges)) out[key] = {...out[key], range, autorange: range === null}
        return out
      }
      // drawn in the next animation frame, and only while on screen: a figure scrolled out
      // of view is drawn with the latest data when it comes back. A change of the data
      // alone, in a figure whose every axis has a range (quick), moves the traces without
      // redrawing axes and legend (Plotly.animate without redraw: the same picture,
      // tests/test_dashboard_defects.py); a change of the layout or of a range, Plotly.react
      // (animated, an axis's new tick labels would not move the margins as a redraw does).
      // New notes alone (shapes) are redrawn by Plotly.relayout, which draws the shapes only.
      // One draw at a time: data that comes during a draw is drawn once it is done (the
      // latest only). Each draw's promise is in window.explorerDrawing until it is done
      // (the frame clock waits for them, layout.FrameClock); graph.draws counts finished draws.
      const drawing = window.explorerDrawing = window.explorerDrawing || new Set()
      const track = promise => {
        const done = promise.catch(error => console.error(error)).finally(() => drawing.delete(done))
        drawing.add(done)
        return done
      }
      let frame = null, onScreen = true, stale = false, relayout = false, rerange = false, reshape = false
      let busy = false, again = false
      let drawnBars = traces().map(d => d.type === "bar" && d.y ? d.y.length : -1).join()
      graph.draws = 0
      const draw = async () => {
        frame = null
        stale = !onScreen
        if (stale) return
        if (busy) { again = true; return }
        busy = true
        // Plotly.animate gives bars it adds no fill (drawn black): a new count of bars redraws
        const data = traces(), bars = data.map(d => d.type === "bar" && d.y ? d.y.length : -1).join()
        const full = relayout || rerange || !model.quick || bars !== drawnBars
        const shapesOnly = reshape && !full
        relayout = rerange = reshape = false
        drawnBars = bars
        await track(full ? window.Plotly.react(graph, data, layout(), model.config)
                         : window.Plotly.animate(graph, {data, traces: data.map((_, i) => i)}, QUICK))
        if (shapesOnly) await track(window.Plotly.relayout(graph, {shapes: structuredClone(model.shapes)}))
        graph.draws += 1
        busy = false
        if (again) { again = false; schedule() }
      }
      const schedule = () => { if (frame === null) frame = requestAnimationFrame(draw) }
      model.on(["values", "arrays"], schedule)
      model.on("layout", () => { relayout = true; schedule() })
      model.on("ranges", () => { rerange = true; schedule() })
      model.on("shapes", () => { reshape = true; schedule() })
      busy = true
      track(window.Plotly.newPlot(graph, traces(), layout(), model.config))
        .then(() => { busy = false; if (again) { again = false; schedule() } })
      new IntersectionObserver(entries => {
        onScreen = entries[entries.length - 1].isIntersecting
        if (onScreen && stale) schedule()
      }).observe(el)
      let width = 0
      new ResizeObserver(entries => {
        const now = entries[0].contentRect.width
        if (now > 0 && now !== width && graph._fullLayout) {
          width = now
          window.Plotly.Plots.resize(graph)
        }
      }).observe(el)
      return graph
    }
    """

    def trace_values(self, index: int) -> dict:
        """The properties trace ``index`` was given since it was built, as the browser reads
        them (numeric arrays as float64)."""
        numbers, slices = self.arrays["numbers"], self.arrays["slices"].get(str(index), {})
        return {**self.values.get(str(index), {}),
                **{key: numbers[start:stop] for key, (start, stop) in slices.items()}}


class LivePlot:
    """A live Plotly view of a figure whose traces are looked up, and patched, by name.

    A trace's key is its ``uid`` when set (two traces may share a legend label), else its name.
    An update goes to the browser as given; the validated figure (:attr:`figure`,
    :meth:`trace`) takes it in when it is read: validating every array on every update
    (plotly's setters) was most of a redraw's server time (benchmarks/README.md, "Figures
    behind the code").
    """

    def __init__(self, figure: go.Figure, *, height: int = 340, over_stream: bool = False):
        figure.update_xaxes(ticklabeloverflow="allow")
        figure.update_yaxes(ticklabeloverflow="allow")
        # what the student zoomed or hid in the legend stays so while the data changes
        figure.update_layout(uirevision="live")
        figure.layout.template = _flat_template(figure)  # replaced: update_layout would merge
        self._figure = figure
        self._index = {trace.uid or trace.name: i for i, trace in enumerate(figure.data)}
        if len(self._index) != len(figure.data):
            raise ValueError("every trace of a LivePlot needs its own name (or uid)")
        self._values: dict[str, dict] = {}
        self._pending: dict[int, dict] = {}
        self._requested: dict = {}
        self._marks: list | None = None  # notes not sent yet (the stream grows)
        self._marked_at, self._shapes_pending = -np.inf, False
        self._built = [trace.to_plotly_json() for trace in figure.data]
        layout = figure.layout.to_plotly_json()
        self._ranged = ranged_axes(layout, self._built)
        self._axes = _axis_settings(layout)
        self._ranges: dict = {}
        self.over_stream = over_stream
        """Whether the figure's x axes are the stream's t: then they start at 0 and end
        where the data asks (:mod:`.ranges`) but never past ``stream_length`` (no negative
        t at t = 0, no t = 1200 at the end of 1000 rows)."""
        self.stream_length = 0
        """Rows in the stream (the page sets it); 0: unknown, the x axes fit the data."""
        self._ranged_length = 0
        self.growing = False
        """Whether the stream is playing: axes from zero then end on the ladder's rungs, which
        change rarely (:mod:`.ranges`); the next update, or :meth:`settle`, applies it."""
        self._ranged_growing = False
        self.title = ""
        """The figure's title for its text alternative (:func:`~.aria.describe`; ``plot_cell`` sets it)."""
        self._described_at, self._undescribed = -np.inf, True
        self._set_ranges()
        self.pane = PlotlyView(data=self._built, layout=figure.layout.to_plotly_json(), height=height,
                               ranges=dict(self._ranges), quick=self._ranged is not None,
                               sizing_mode="stretch_width")

    @property
    def figure(self) -> go.Figure:
        """The figure with every update so far, validated by plotly."""
        for index, properties in self._pending.items():
            trace = self._figure.data[index]
            for key, value in properties.items():  # plain assignment: faster than update()
                setattr(trace, key, value)
        self._pending = {}
        if self._shapes_pending:
            self._figure.layout.shapes, self._shapes_pending = self.pane.shapes, False
        return self._figure

    def update(self, traces: Mapping[str, Mapping], layout: Mapping | None = None,
               marks: Mapping | None = None) -> None:
        """Set the given properties (``{"trace key": {"x": ..., "y": ...}}``) and layout
        entries, then redraw once. ``marks``, the notes on the figure
        (:func:`~explorer.plots.event_marks`'s shapes), replace the layout's shapes; they are
        redrawn alone (``Plotly.relayout``: a new layout is a whole ``Plotly.react``, which at
        every shrink cost the play rate), at once at rest and at most every ``ANNOUNCE_SECONDS``
        while the stream grows, the latest at :meth:`settle`.

        Nothing is sent when nothing changed: a spectrum between two shrinks is not redrawn
        (one ``Plotly.react`` is tens of milliseconds in a browser that renders in software).
        """
        changed = arrays_changed = False
        for name, properties in traces.items():
            index = self._index[name]
            shown = self._values.get(str(index), {})
            properties = {key: _plain(value) for key, value in properties.items()
                          if key not in shown or not _same(shown[key], _plain(value))}
            if properties:
                changed = True
                arrays_changed = arrays_changed or any(_packable(value) or _packable(shown.get(key))
                                                       for key, value in properties.items())
                self._pending.setdefault(index, {}).update(properties)
                # a new dict, never edited in place: param compares the new value with the old one
                self._values[str(index)] = {**shown, **properties}
        changes = {}
        if changed:
            values, arrays = _packed(self._values)
            changes = {"values": values, **({"arrays": arrays} if arrays_changed else {})}
        self._marks = self._marks if marks is None else [dict(shape) for shape in marks["shapes"]]
        if self._marks == self.pane.shapes:
            self._marks = None
        elif self._marks is not None and self._due(self._marked_at):
            changes["shapes"], self._marks, self._marked_at = self._marks, None, time.monotonic()
            self._shapes_pending = True
        layout, relayout = layout or {}, False
        # the layout is re-sent only when an entry changes
        if any(key not in self._requested or self._requested[key] != value for key, value in layout.items()):
            # a list (shapes, annotations) replaces the figure's: update_layout would apply a
            # shorter list to the old entries cyclically and keep them all
            self._figure.update_layout({key: value for key, value in layout.items() if not isinstance(value, list)})
            for key, value in layout.items():
                if isinstance(value, list):
                    self._figure.layout[key] = value
            self._requested.update(copy.deepcopy(layout))
            self._axes = _axis_settings(self._figure.layout.to_plotly_json())
            relayout = True
        moved = self.growing != self._ranged_growing or self.stream_length != self._ranged_length
        if (changed or relayout or moved) and self._set_ranges():
            changes["ranges"] = dict(self._ranges)
        if relayout:
            changes["layout"] = self._figure.layout.to_plotly_json()
        self._undescribed = self._undescribed or changed or relayout
        if self._undescribed and self._due(self._described_at):
            changes.update(self._described())
        if changes:
            self.pane.param.update(changes)

    def _due(self, since: float) -> bool:
        """Whether what was last sent at ``since`` (the marks, the text alternative) may go
        again: at rest at once, while the stream grows every ``ANNOUNCE_SECONDS``."""
        return not self.growing or time.monotonic() - since >= ANNOUNCE_SECONDS

    def _described(self) -> dict:
        """The new ``label`` of the pane, if it changed (at most every ANNOUNCE_SECONDS while growing)."""
        self._described_at, self._undescribed = time.monotonic(), False
        traces = [{**built, **self._values.get(str(i), {})} for i, built in enumerate(self._built)]
        label = describe(self.title, self._figure.layout.to_plotly_json(), traces, self.over_stream)
        return {"label": label} if label != self.pane.label else {}

    def settle(self) -> None:
        """The stream stopped: fit the axes as at rest (:attr:`growing` off), one redraw if
        that moves them."""
        self.growing = False
        self.update({})

    def _set_ranges(self) -> bool:
        """Give the ranged axes the ranges the data asks for (:mod:`.ranges`); whether any changed."""
        if self._ranged is None:
            return False
        traces = [{**built, **self._values.get(str(i), {})} for i, built in enumerate(self._built)]
        ranges = axis_ranges(self._axes, traces, self._ranged, growing=self.growing)
        if self.over_stream and self.stream_length > 0:  # t: from 0, never past the last row
            ranges.update({key: [0.0, min(value[1], float(self.stream_length)) if value else float(self.stream_length)]
                           for key, value in ranges.items() if key.startswith("xaxis")})
        self._ranged_growing, self._ranged_length = self.growing, self.stream_length
        if ranges == self._ranges:
            return False
        self._figure.update_layout({key: {"range": value, "autorange": value is None}
                                    for key, value in ranges.items() if self._ranges.get(key, 0) != value})
        self._ranges = ranges
        return True

    def trace(self, name: str):
        """The trace whose key is ``name`` (for tests and for reading back what is drawn)."""
        return self.figure.data[self._index[name]]


FLAT_TEMPLATE_LAYOUT = ("autotypenumbers", "colorway", "font", "hovermode", "hoverlabel", "paper_bgcolor",
                        "plot_bgcolor", "coloraxis", "colorscale", "xaxis", "yaxis", "shapedefaults",
                        "annotationdefaults", "title")
"""What a 2-D figure reads of its template's layout (not polar, ternary, scene or geo)."""


def _flat_template(figure: go.Figure) -> go.layout.Template:
    """The figure's template cut to what it draws: the 2-D layout defaults and the trace
    defaults of its own trace types. Plotly applies the whole template on every redraw
    (defaults for every trace type and for 3-D, polar and geographic axes): about a
    quarter of a redraw's script time here; the figure looks the same.

    The cut is validated once per distinct content (:data:`_TEMPLATES`) and assigned, not
    passed to ``update_layout``: that would merge it into the whole template, and
    validating a template dict costs about 40 ms per figure."""
    template = figure.layout.template.to_plotly_json()
    types = {trace.type for trace in figure.data}
    flat = {"layout": {key: value for key, value in template.get("layout", {}).items()
                       if key in FLAT_TEMPLATE_LAYOUT},
            "data": {key: value for key, value in template.get("data", {}).items() if key in types}}
    key = json.dumps(flat, sort_keys=True)
    if key not in _TEMPLATES:
        _TEMPLATES[key] = go.layout.Template(flat)
    return _TEMPLATES[key]


_TEMPLATES: dict[str, go.layout.Template] = {}
"""The validated cut templates by their JSON: a handful (one per template and trace types)."""


def _packed(values: Mapping[str, Mapping]) -> tuple[dict, dict]:
    """``values`` as :class:`PlotlyView` takes them: the other properties as they are
    (``values``), the 1-D numeric arrays in one float64 buffer (``arrays``; each distinct
    array once, so the t every curve shares goes once). An integer array becomes float64, exact
    up to 2**53 (t, indices); Plotly draws it the same."""
    plain, slices, chunks, starts, size = {}, {}, [], {}, 0
    for index, properties in values.items():
        for key, value in properties.items():
            if not _packable(value):
                plain.setdefault(index, {})[key] = value
                continue
            numbers = value.astype(float)
            content = numbers.tobytes()
            if content not in starts:
                starts[content] = size
                chunks.append(numbers)
                size += numbers.size
            slices.setdefault(index, {})[key] = [starts[content], starts[content] + numbers.size]
    numbers = np.concatenate(chunks) if chunks else np.zeros(0)
    return plain, {"numbers": numbers, "slices": slices}


def _packable(value) -> bool:
    """Whether a property value (as :func:`_plain` makes it) travels in the packed buffer."""
    return isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype.kind in "fiu"


def _axis_settings(layout: Mapping) -> dict[str, dict]:
    """What :func:`~.ranges.axis_ranges` reads of a layout: each axis's type and matches."""
    return {key: {name: axis[name] for name in ("type", "matches") if name in axis}
            for key, axis in layout.items() if key[:5] in ("xaxis", "yaxis") and isinstance(axis, Mapping)}


def _same(old, new) -> bool:
    """Whether two property values (as :func:`_plain` makes them) draw the same thing."""
    if isinstance(old, np.ndarray) or isinstance(new, np.ndarray):
        old, new = np.asarray(old), np.asarray(new)
        return (old.shape == new.shape and old.dtype.kind == new.dtype.kind
                and np.array_equal(old, new, equal_nan=old.dtype.kind == "f"))
    if isinstance(old, list) and isinstance(new, list):
        return len(old) == len(new) and all(_same(a, b) for a, b in zip(old, new))
    try:
        return bool(old == new) and type(old) is type(new)
    except ValueError:  # containers of arrays: compare as different
        return False


def _plain(value):
    """A trace property as JSON-ready data (numpy arrays stay arrays: they go as binary).

    A 2-D array (a heatmap's ``z``) goes as a list of its rows, each a 1-D array: Bokeh
    sends an n-d array as one flat typed array (its shape beside it, which Plotly does
    not read), so Plotly took ``z`` for 1-D and drew a diagonal of cells.
    """
    if isinstance(value, np.ndarray):
        # a copy: the caller's array may be a view of a buffer it writes again (the history's
        # current point is replaced in place), and the last values sent are compared with
        # the next ones
        return [_plain(row) for row in value] if value.ndim >= 2 else value.copy()
    if isinstance(value, BasePlotlyType):
        return value.to_plotly_json()
    if isinstance(value, tuple):
        return list(value)
    return value
