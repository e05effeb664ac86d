""""Open the next update" on a dashboard page: the round the next Step plays, taken apart.

The page offers its algorithms with their next row (:meth:`Page.next_rounds
<explorer.dashboard.page.Page.next_rounds>`: name -> ``(algorithm, x, y)``); :func:`open_next`
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

from ..anatomy import OpenedRound, open_round
from ..plots.anatomy import round_heatmaps

__all__ = ["open_next", "parts_html", "OpenedUpdate"]


def open_next(page, name: str) -> OpenedRound | None:
    """The round the next Step plays on the page's algorithm ``name``, opened on a copy;
    None at the end of the stream (``ValueError`` for a name the page does not offer)."""
    if page.finished:
        return None
    offered = page.next_rounds()
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
    """The panel: pick an algorithm, read its next round's steps with their numbers, see ``B``
    and the incoming row. Redrawn when the page's ``t`` changes, only while it is shown
    (``shown``: the card is open), so a collapsed panel costs a Play tick nothing."""

    algorithm = param.Selector(default=None, objects=[], doc="Which of the page's algorithms to open.")

    def __init__(self, page, **params):
        super().__init__(**params)
        self.page = page
        self.param.algorithm.objects = names = list(page.next_rounds())
        self.algorithm = names[0] if names else None
        self.steps = pn.pane.HTML("", sizing_mode="stretch_width")
        self.figure = pn.pane.Plotly(None, sizing_mode="stretch_width", config={"displaylogo": False})
        self.shown = False
        self.param.watch(lambda *_: self.refresh(), ["algorithm"])
        page.param.watch(lambda *_: self.refresh() if self.shown else None, ["t", "n_rows"])

    def refresh(self) -> None:
        names = list(self.page.next_rounds())
        if names != self.param.algorithm.objects:  # a restart may change the line-up
            self.param.algorithm.objects = names
            if self.algorithm not in names:
                self.algorithm = names[0] if names else None
                return  # the watcher on algorithm redraws
        opened = None if self.algorithm is None else open_next(self.page, self.algorithm)
        self.steps.object = parts_html(opened, self.algorithm or "")
        self.figure.object = None if opened is None else round_heatmaps(opened)

    def panel(self) -> pn.Card:
        """A collapsed card: the choice, the steps, the heatmaps."""
        choice = pn.widgets.Select.from_param(self.param.algorithm, name="Open the next update of")
        card = pn.Card(choice, self.steps, self.figure, title="Open the next update", collapsed=True,
                       sizing_mode="stretch_width")

        def shown(event) -> None:
            self.shown = not event.new
            if self.shown:
                self.refresh()

        card.param.watch(shown, ["collapsed"])
        return card
