"""One opened round drawn: the buffer ``B`` with the incoming row, and ``B`` after the round.

:func:`round_heatmaps` draws an :class:`~explorer.anatomy.OpenedRound` as two heatmaps side
by side on one colour scale centred at 0: left, the occupied rows of ``B`` before the round
with the row that enters (``x_t``, or RFD-SON's sketched row) as the last, outlined; right,
the same rows after (a shrink leaves fewer, orthogonal rows: the freed rows are drawn as the
zeros they now are). The round's parts are the
figure's caption lines, in the paper's notation.

>>> from explorer.anatomy import open_sketch_round
>>> from explorer.sketch import FrequentDirections
>>> sketch = FrequentDirections(4, 2)
>>> sketch.update([1.0, 0.0, 0.0, 0.0])
>>> fig = round_heatmaps(open_sketch_round(sketch, [0.0, 2.0, 0.0, 0.0]))
>>> [trace.name for trace in fig.data], fig.data[0].z.shape, fig.data[1].z.shape
(['B with x_t', 'B after'], (2, 4), (2, 4))

Reference: Liberty (KDD 2013); Luo, Chen, Zhang, Li (2017), Algorithms 1-5.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .style import INCOMING_OUTLINE, LAYOUT

__all__ = ["round_heatmaps"]

DIVERGING = "RdBu"
"""A diverging colour scale (blue negative, red positive, white 0), readable in grey."""


def round_heatmaps(opened, *, height: int = 320) -> go.Figure:
    """Draw ``opened`` (an :class:`~explorer.anatomy.OpenedRound`): ``B`` with the incoming
    row last (outlined), and ``B`` after; hover shows row, column and value."""
    width = opened.after.shape[1] if opened.after.ndim == 2 else 0
    incoming = opened.before if opened.row is None else np.vstack([opened.before, opened.row[None, :]])
    after = np.zeros((max(incoming.shape[0], opened.after.shape[0]), width))
    after[:opened.after.shape[0]] = opened.after
    panels = [("B with x_t", incoming), ("B after", after)]
    top = max([float(np.abs(z).max()) for _, z in panels if z.size] + [1e-300])
    fig = make_subplots(rows=1, cols=2, subplot_titles=[name for name, _ in panels], horizontal_spacing=0.08)
    for col, (name, z) in enumerate(panels, start=1):
        fig.add_trace(go.Heatmap(
            z=z if z.size else np.zeros((0, width)), name=name, zmin=-top, zmax=top, zmid=0.0,
            colorscale=DIVERGING, showscale=col == 2, colorbar={"title": {"text": "entry"}},
            hovertemplate="row %{y}, column %{x}: %{z:.4g}<extra>" + name + "</extra>"), row=1, col=col)
        fig.update_yaxes(title_text="row of B", autorange="reversed", dtick=1, row=1, col=col)
        fig.update_xaxes(title_text="column", row=1, col=col)
    if opened.row is not None:
        last = incoming.shape[0] - 1
        fig.add_shape(type="rect", x0=-0.5, x1=width - 0.5, y0=last - 0.5, y1=last + 0.5,
                      line={"color": INCOMING_OUTLINE, "width": 2}, row=1, col=1)
    fig.update_layout(**LAYOUT, height=height, title={"text": f"{opened.algorithm}, round t = {opened.t}"},
                      meta={"caption": opened.lines()})
    return fig
