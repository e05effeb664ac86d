"""The cells and controls a dashboard page is laid out with: a plot's cell (title,
explanation, figure) in a grid that wraps, rows of controls that wrap, labelled button
groups, on/off switches, hover hints that stay clear of their neighbours, and the help
text's colours per theme (contrast measured against WCAG AA).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import panel as pn
from bokeh.models import Tooltip

if TYPE_CHECKING:
    from .live import LivePlot

__all__ = ["explanation", "plot_cell", "labelled", "hint", "switch", "row", "plot_grid", "CELL_WIDTH",
           "HINT_CSS", "TEXT_CSS", "help_text"]


def explanation(text: str) -> pn.pane.Markdown:
    """The grey lines under a plot's title saying what to look for, as tall as they need:
    a fixed height cut their last line off under the plot."""
    return help_text(text, margin=(0, 10), min_height=40, sizing_mode="stretch_width")


TEXT_CSS = {"default": ":host(.help-text) { color: #666; } :host(.status-text) { color: #8a4b08; }",
            "dark": ":host(.help-text) { color: #adb5bd; } :host(.status-text) { color: #ffda6a; }"}
"""The dashboard's text colours by theme (``pn.config.theme``), one class each: the grey help
lines (``help-text``: 5.7:1 on white, 7.4:1 on the dark theme's #212529) and the transport's
status line (``status-text``: 6.8:1 and 11.4:1); WCAG AA asks 4.5:1 of text."""


def help_text(text, css_class: str = "help-text", **params) -> pn.pane.Markdown:
    """A help line in the grey of :data:`TEXT_CSS` (or its ``css_class``) for the session's theme."""
    return pn.pane.Markdown(text, css_classes=[css_class],
                            stylesheets=[TEXT_CSS.get(pn.config.theme, TEXT_CSS["default"])], **params)


def plot_cell(title: str, explained, plot: "LivePlot", *controls) -> pn.Column:
    """One cell of a page's grid: the title (with ``controls`` beside it), its explanation
    (text, or a pane the page keeps to change later), then the plot."""
    heading = pn.pane.Markdown(f"#### {title}", margin=(0, 10))
    if controls:
        heading = row(heading, *controls)
    if isinstance(explained, str):
        explained = explanation(explained)
    plot.title = title
    return pn.Column(heading, explained, plot.pane, sizing_mode="stretch_width",
                     styles={"flex": f"1 1 {CELL_WIDTH}px"})


CELL_WIDTH = 440
"""A plot cell's smallest comfortable width (px): two side by side from about 900 px of
page, one above the other below (a 1024 px laptop with the sidebar open)."""


def plot_grid(*cells) -> pn.FlexBox:
    """The page's plot cells, two per line when there is room, else one (a fixed
    two-column grid squeezed the plots and their titles into 330 px at 1024 px)."""
    return pn.FlexBox(*cells, flex_wrap="wrap", sizing_mode="stretch_width")


def row(*items, **params) -> pn.Row:
    """A row of controls that wraps onto the next line instead of running off the page.

    Its children's fixed widths must fit one line: Panel makes a Row's minimum width the
    sum of them (five 170 px sliders: 850 px, an explicit ``min_width`` is overridden), and
    the page grows to it although the row wraps. Controls that need not fit go in a
    wrapping ``pn.FlexBox`` (the PCA page's sliders)."""
    styles = {"flex-wrap": "wrap", **params.pop("styles", {})}
    return pn.Row(*items, styles=styles, **{"sizing_mode": "stretch_width", **params})


def switch(parameter, label: str, **params) -> pn.widgets.Toggle:
    """An on/off control for a Boolean ``parameter``: a toggle button whose whole face,
    label included, switches it (a Checkbox's label is a ``div`` beside the box, and a
    click on the words "log scale" did nothing); pressed means on."""
    return pn.widgets.Toggle.from_param(parameter, name=label, color="primary",
                                        variant="outline", **params)


def labelled(label: str, widget) -> pn.Column:
    """``widget`` with ``label`` above it, as Panel's other widgets show theirs: a button
    group shows no label at all (three Newton toggles had none). Its hover text goes above
    it, over the label (:func:`hint`), never over the control beside it."""
    return pn.Column(pn.pane.Markdown(label, margin=(0, 5), styles={"font-size": "0.9em"}),
                     hint(widget, "above"), margin=0)


def hint(widget, attachment: str = "below"):
    """``widget`` (a button or button group) with its hover text (``description``) centred
    ``attachment`` ("above" or "below") it, at most 300 px wide and transparent to the
    mouse: a click where it shows reaches the control under it. (Panel puts it to the
    right, over the next control, and a long one runs off the page.)"""
    if isinstance(widget.description, str) and hasattr(widget, "description_delay"):
        position = "top_center" if attachment == "above" else "bottom_center"
        widget.description = Tooltip(content=widget.description, position=position,
                                     attachment=attachment, stylesheets=[HINT_CSS])
    return widget


HINT_CSS = ":host { white-space: normal; max-width: 300px; pointer-events: none; }"
"""The stylesheet of a :func:`hint`: wrapped at 300 px, never the target of a click."""
