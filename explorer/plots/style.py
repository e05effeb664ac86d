"""The one home of the figures' look: colours, layout, heights (lessons and dashboard alike).

Every method keeps one colour in every figure: FD blue and RFD red, the exact method
black or grey, the hindsight comparators light grey. Labels are matched on their start,
so ``"RFD-SON, m = 5"`` is drawn in RFD-SON's colour.

>>> method_color("RFD-SON, m = 20") == METHOD_COLORS["RFD-SON"] == COLORS[1]
True
>>> method_color("FD (Algorithm 2)") == METHOD_COLORS["FD"], method_color("Oja-SON")
(True, None)
"""

from __future__ import annotations

__all__ = ["COLORS", "LAYOUT", "HEIGHT", "MARGIN", "EXACT_GREY", "COMPARATOR_GREY",
           "METHOD_COLORS", "method_color"]

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#7f7f7f")
"""The colour cycle of every builder (plotly's D3 palette, reordered: FD blue, RFD red)."""

EXACT_GREY = "#7f7f7f"
"""The exact (oracle) quantity a sketch approximates: A^T A's spectrum, FTRL's full Theta."""

COMPARATOR_GREY = "#b0b0b0"
"""Hindsight comparators (the best fixed predictor, the majority class)."""

LAYOUT = dict(template="plotly_white", margin=dict(l=60, r=20, t=50, b=50),
              legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="left", x=0.0))
"""Layout shared by every figure (a lesson's and a dashboard page's)."""

HEIGHT = 330
"""Height in pixels of a dashboard figure."""

MARGIN = dict(l=60, r=20, t=70, b=45)
"""Margins of a dashboard figure: room above for the legend, the title is the page's."""

METHOD_COLORS = {
    "RFD-SON": COLORS[1],   # red, as RFD everywhere
    "FD-SON": COLORS[0],    # blue, as FD everywhere
    "RP-SON": COLORS[2],    # green
    "FULL-ON": "#000000",   # the exact method: black
    "ADAGRAD": COLORS[6],   # grey (diagonal AdaGrad)
    "OGD": COLORS[5],       # brown
    "RFD": COLORS[1],
    "FD": COLORS[0],
}
"""Colour of each method; a label is matched on its start ("FD-SON, m = 5" is FD-SON)."""


def method_color(name: str, default: str | None = None) -> str | None:
    """The colour of the method ``name`` starts with (longest match), else ``default``."""
    matches = [key for key in METHOD_COLORS if str(name).upper().startswith(key)]
    return METHOD_COLORS[max(matches, key=len)] if matches else default
