"""Live Plotly panes: build a figure once, then patch only its trace data.

Panel's Plotly pane sends a changed trace array as a binary column and calls
``Plotly.react`` in the browser, so the figure is not rebuilt from scratch as long as
the traces and the layout stay the same (UX.md, "Performance"). A :class:`LivePlot`
keeps its ``plotly.graph_objects.Figure`` and assigns new arrays to named traces; the
pane is told once per update (``link_figure=False``: no message per edited property,
holoviz/panel#4141). Turning the figure into a dict on every update instead would
validate every trace again (about 8 ms per figure here, against under 1 ms).

A layout change is sent when the layout differs from the one the pane sent last, which
Panel keeps as a shallow copy: a nested change (``yaxis.type``, an axis title) would edit
a dict both share and never be sent. :meth:`LivePlot.update` therefore gives every
top-level property it changes a fresh copy first (cheap: only when the layout changes).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

import numpy as np
import panel as pn
import plotly.graph_objects as go
from plotly.basedatatypes import BasePlotlyType

__all__ = ["LivePlot", "finite", "explanation", "plot_cell"]

CONFIG = {"displaylogo": False, "responsive": True,
          "modeBarButtonsToRemove": ["select2d", "lasso2d", "autoScale2d"]}


def finite(values) -> np.ndarray:
    """A float array with inf and NaN turned into NaN (Plotly leaves a gap there)."""
    values = np.asarray(values, dtype=float)
    return np.where(np.isfinite(values), values, np.nan)


class LivePlot:
    """A Plotly pane over a figure whose traces are looked up, and patched, by name.

    A trace's key is its ``uid`` when set (two traces may share a legend label), else its name.
    """

    def __init__(self, figure: go.Figure, *, height: int = 340):
        self.figure = figure
        self._index = {trace.uid or trace.name: i for i, trace in enumerate(figure.data)}
        if len(self._index) != len(figure.data):
            raise ValueError("every trace of a LivePlot needs its own name (or uid)")
        self._layout: dict = {}
        self.pane = pn.pane.Plotly(figure, link_figure=False, config=CONFIG, height=height,
                                   sizing_mode="stretch_width")

    def update(self, traces: Mapping[str, Mapping], layout: Mapping | None = None) -> None:
        """Set the given properties (``{"trace key": {"x": ..., "y": ...}}``), then redraw once."""
        for name, properties in traces.items():
            trace = self.figure.data[self._index[name]]
            for key, value in properties.items():  # plain assignment: ~3x faster than update()
                setattr(trace, key, value)
        if layout and layout != self._layout:  # the layout is re-sent only when it changes
            self._detach(layout)
            self.figure.update_layout(layout)
            self._layout = copy.deepcopy(dict(layout))
        self.pane.param.trigger("object")

    def _detach(self, layout: Mapping) -> None:
        """Give the layout properties about to change new dicts (Panel compares a shallow copy)."""
        current = self.figure.layout
        for key in layout:
            if key in current and isinstance(current[key], BasePlotlyType):
                value = current[key].to_plotly_json()  # a deep copy
                if value:
                    current[key] = value

    def trace(self, name: str):
        """The trace whose key is ``name`` (for tests and for reading back what is drawn)."""
        return self.figure.data[self._index[name]]


def explanation(text: str) -> pn.pane.Markdown:
    """The grey line under a plot's title saying what to look for (fixed height: no jumps)."""
    return pn.pane.Markdown(text, styles={"color": "#555"}, margin=(0, 10), height=60)


def plot_cell(title: str, explained, plot: "LivePlot", *controls) -> pn.Column:
    """One cell of a page's grid: the title (with ``controls`` beside it), its explanation
    (text, or a pane the page keeps to change later), then the plot."""
    heading = pn.pane.Markdown(f"#### {title}", margin=(0, 10))
    if controls:
        heading = pn.Row(heading, *controls)
    if isinstance(explained, str):
        explained = explanation(explained)
    return pn.Column(heading, explained, plot.pane, sizing_mode="stretch_width")
