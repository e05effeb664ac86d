""""Open the next update" on a dashboard page: the round the next Step plays, taken apart.

The page offers its algorithms with their next row (:func:`next_rounds`: name ->
``(algorithm, x, y)``, from the page's race, or the page's own ``next_rounds()``); :func:`open_next`
plays that round on a copy (``from_state_dict(state_dict())``: the page is untouched) through
:func:`explorer.anatomy.open_round`, and :class:`OpenedUpdate` shows it: the parts as an
ordered list in the paper's notation (text, never markup) and
:func:`explorer.plots.anatomy.round_heatmaps`. It follows the stream: after a Step, Back
or seek it shows the round that comes next.

>>> from explorer.sketch import FrequentDirections
>>> class Page:  # what a page offers
...     t, finished = 0, False
...     def next_rounds(self):
...         return {"FD": (FrequentDirections(3, 2), [1.0, 2.0, 0.0], None)}
>>> open_next(Page(), "FD").lines()
['round t = 1 of FD (m = 2): x_t enters B as row 1 of 2', 'no shrink: 1 row free before the buffer is full']
"""

from __future__ import annotations

import html

import panel as pn
import param

from ..anatomy import OpenedRound, can_open, open_round
from ..plots.anatomy import round_heatmaps
from .controls import collapsible

__all__ = ["next_rounds", "open_next", "parts_html", "OpenedUpdate"]


def next_rounds(page) -> dict[str, tuple]:
    """What the next Step plays, per algorithm that :func:`~explorer.anatomy.open_round`
    opens: ``{name: (algorithm, x, y)}``, from the page's own ``next_rounds()`` if it has one
    (a page of sketches), else from its race (the learners still running, the race's next
    row and label); empty at the end of the stream."""
    if page.finished:
        return {}
    if callable(getattr(page, "next_rounds", None)):
        return page.next_rounds()
    race = page.race
    x, y = race.X[race.t], None if race.y is None else float(race.y[race.t])
    return {name: (learner, x, y) for name, learner in race.learners.items()
            if name not in race.stopped and can_open(learner)}


def open_next(page, name: str) -> OpenedRound | None:
    """The round the next Step plays on the page's algorithm ``name``, opened on a copy;
    None at the end of the stream (``ValueError`` for a name the page does not offer)."""
    if page.finished:
        return None
    offered = next_rounds(page)
    if name not in offered:
        raise ValueError(f"this page offers no algorithm {name!r} to open; it offers {sorted(offered)}")
    algorithm, x, y = offered[name]
    twin = type(algorithm).from_state_dict(algorithm.state_dict())
    return open_round(twin, x, y)


def parts_html(opened: OpenedRound | None, name: str = "") -> str:
    """The parts as an ordered list headed by ``name`` (the page's name of the algorithm),
    every text escaped (a name may come from user data: never markup)."""
    if opened is None:
        return "<p>The stream is over: there is no next update.</p>"
    title = html.escape(f"{name or opened.algorithm}, round t = {opened.t}")
    items = "".join(f"<li>{html.escape(line)}</li>" for line in opened.lines())
    return f'<p><strong>{title}</strong></p><ol class="opened-round" aria-label="{title}">{items}</ol>'


class OpenedUpdate(param.Parameterized):
    """The panel: a toggle button "Open the next update"; when pressed, the choice of the
    page's algorithm, its next round's steps with their numbers, and ``B`` with the incoming
    row. Redrawn when the page's ``t`` changes only while shown, so a closed panel costs a
    Play tick nothing (and draws no graph)."""

    algorithm = param.Selector(default=None, objects=[], doc="Which of the page's algorithms to open.")
    shown = param.Boolean(default=False, doc="The panel is open (the toggle is pressed).")

    def __init__(self, page, **params):
        super().__init__(**params)
        self.page = page
        self.param.algorithm.objects = names = list(next_rounds(page))
        self.algorithm = names[0] if names else None
        self.steps = pn.pane.HTML("", sizing_mode="stretch_width")
        self.figure = None  # made at the first opening: an empty Plotly pane still draws a graph
        self.figure_holder = pn.Column(sizing_mode="stretch_width")
        self.param.watch(lambda *_: self.refresh() if self.shown else None, ["algorithm", "shown"])
        page.param.watch(lambda *_: self.refresh() if self.shown else None, ["t", "n_rows"])

    def refresh(self) -> None:
        names = list(next_rounds(self.page))
        if names and names != self.param.algorithm.objects:  # a restart may change the line-up
            self.param.algorithm.objects = names
            if self.algorithm not in names:
                self.algorithm = names[0]
                return  # the watcher on algorithm redraws
        opened = None if self.algorithm is None else open_next(self.page, self.algorithm)
        self.steps.object = parts_html(opened, self.algorithm or "")
        if opened is None:
            self.figure_holder.objects = []
        elif self.figure is None:
            self.figure = pn.pane.Plotly(round_heatmaps(opened), sizing_mode="stretch_width",
                                         config={"displaylogo": False})
            self.figure_holder.objects = [self.figure]
        else:
            self.figure.object = round_heatmaps(opened)
            self.figure_holder.objects = [self.figure]

    def panel(self) -> pn.Column:
        """The toggle, and below it (while pressed) the choice, the steps and the heatmaps."""
        return collapsible(self.param.shown, "Open the next update", lambda: [
            pn.widgets.Select.from_param(self.param.algorithm, name="Open the next update of"),
            self.steps, self.figure_holder])
