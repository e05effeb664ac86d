"""The one home of the figures' look: colours, layout, heights (lessons and dashboard alike).

Every method keeps one colour in every figure (:data:`METHOD_COLORS`), and related methods
share a hue: the FD family blue (ADA-FFD navy, GFD and S-FTRL light blue), the RFD family
red, random projections green, the exact full-matrix methods (FULL-ON, ADA-FULL, FTRL)
:data:`EXACT_GREY`, diagonal AdaGrad brown, OGD dark orange. Concepts keep theirs
(:data:`CONCEPT_COLORS`): the exact (oracle) quantity grey, the hindsight comparator a
lighter grey (dashed), bounds black (dashed), baselines dark grey. Every line colour has a
contrast of at least 3:1 on white (:func:`contrast`). Labels are matched on their start,
so ``"RFD-SON, m = 5"`` is drawn in RFD-SON's colour.

>>> method_color("RFD-SON, m = 20") == METHOD_COLORS["RFD-SON"] == COLORS[1]
True
>>> method_color("FD (Algorithm 2)") == METHOD_COLORS["FD"], method_color("ADA-FULL") == EXACT_GREY
(True, True)
>>> method_color("best fixed projection") == COMPARATOR_GREY, method_color("a bound")
(True, None)
"""

from __future__ import annotations

__all__ = ["COLORS", "LAYOUT", "HEIGHT", "MARGIN", "EXACT_GREY", "COMPARATOR_GREY", "BOUND_BLACK", "INCOMING_OUTLINE",
           "BASELINE_GREY", "GUIDE_GREY", "BACKGROUND", "CONCEPT_COLORS", "METHOD_COLORS", "TINTS",
           "GFD_HALVES", "EVENT_STYLES", "MARKS_SHOWN", "method_color", "tint", "contrast"]

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#7f7f7f")
"""The colour cycle of every builder (plotly's D3 palette, reordered: FD blue, RFD red)."""

EXACT_GREY = "#7f7f7f"
"""The exact (oracle) quantity a sketch approximates: A^T A's spectrum, FTRL's full Theta."""

COMPARATOR_GREY = "#949494"
"""Hindsight comparators (the best fixed predictor, the majority class), drawn dashed."""

BOUND_BLACK = "#000000"
"""Bounds and levels a method is held to (the shrink level delta, a floor), drawn dashed."""

INCOMING_OUTLINE = "#000000"
"""The outline around the row a round adds to ``B`` (:func:`explorer.plots.anatomy.round_heatmaps`)."""

BASELINE_GREY = "#525252"
"""A reference predictor or level the methods are measured against (a constant predictor)."""

GUIDE_GREY = "#bbbbbb"
"""Guides that are not data (a 50 % line, the rows where the stream switches)."""

BACKGROUND = "#ffffff"
"""The figures' background: marker outlines, a line drawn across a heatmap."""

CONCEPT_COLORS = {"exact": EXACT_GREY, "comparator": COMPARATOR_GREY, "bound": BOUND_BLACK,
                  "baseline": BASELINE_GREY, "guide": GUIDE_GREY, "fixed-share mass": "#6a3d9a"}
"""Colour of each concept drawn beside the methods."""

GFD_HALVES = {"+": "#b35806", "-": "#542788"}
"""Generalized FD's two halves: ``B+`` (gradients with ``q > 0``) orange, ``B-`` purple."""

EVENT_STYLES = {"switch": dict(color=GUIDE_GREY, dash="dot", width=1),
                "shrink": dict(color=BASELINE_GREY, dash="dot", width=1),
                "stopped": dict(color=BOUND_BLACK, dash="dash", width=1.5),
                "leader": dict(color=COMPARATOR_GREY, dash="dashdot", width=1.5)}
"""The line of each kind of event marked on a time axis (:func:`explorer.plots.event_marks`):
a subspace switch of the stream, a sketch's shrink, a learner that stopped (diverged), a
change of leader. The colour is the kind's unless a caller gives the method's."""

MARKS_SHOWN = 30
"""A figure marks at most the latest this many events of each kind (a redraw stays cheap)."""

LAYOUT = dict(template="plotly_white", margin=dict(l=60, r=20, t=50, b=50),
              legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="left", x=0.0))
"""Layout shared by every figure (a lesson's and a dashboard page's)."""

HEIGHT = 330
"""Height in pixels of a dashboard figure."""

MARGIN = dict(l=60, r=20, t=70, b=45)
"""Margins of a dashboard figure: room above for the legend, the title is the page's."""

_FD_BLUE, _FFD_NAVY, _GFD_BLUE = COLORS[0], "#08306b", "#4292c6"
_RFD_RED, _RP_GREEN, _DIAG_BROWN, _OGD_ORANGE = COLORS[1], COLORS[2], "#6b3e26", "#d95f02"

METHOD_COLORS = {
    # Frequent Directions and the learners on an FD sketch: blue
    "FD": _FD_BLUE, "FD-SON": _FD_BLUE, "ADA-FD": _FD_BLUE, "ADA-FFD": _FFD_NAVY,
    "GFD": _GFD_BLUE, "S-FTRL": _GFD_BLUE,
    # Robust FD: red
    "RFD": _RFD_RED, "RFD-SON": _RFD_RED,
    # random projections: green
    "RP": _RP_GREEN, "RP-SON": _RP_GREEN, "ADA-LR": _RP_GREEN, "RADAGRAD": "#1b7837",
    "Oja-SON": "#c51b7d",
    # the exact full-matrix methods the sketches approximate: grey
    "FULL-ON": EXACT_GREY, "ADA-FULL": EXACT_GREY, "FTRL": EXACT_GREY,
    # diagonal AdaGrad, first-order methods
    "ADA-DIAG": _DIAG_BROWN, "ADAGRAD": _DIAG_BROWN,
    "OGD": _OGD_ORANGE, "OGD-FM": _OGD_ORANGE, "SGD": _OGD_ORANGE, "Adam": COLORS[4],
    "OCG": "#7f7f00",
    # online PCA (the paper's Fig. 1 roles) and the hindsight comparators
    "adaptive PCA": _RFD_RED, "adaptive online PCA": _RFD_RED, "online adaptive PCA": _RFD_RED,
    "static online PCA": _FD_BLUE, "Follow the Leader": _RP_GREEN,
    "best fixed": COMPARATOR_GREY, "w*": COMPARATOR_GREY,
}
"""Colour of each method; a label is matched on its start ("FD-SON, m = 5" is FD-SON)."""

TINTS = {"FD": "#9ecae1", "RFD": "#f4a6a6"}
"""Light tints of the FD (every blue method) and RFD hues: bars drawn behind the method's."""


def _match(table: dict, name: str) -> str | None:
    """The key of ``table`` that ``name`` starts with (longest, case-insensitive)."""
    matches = [key for key in table if str(name).upper().startswith(key.upper())]
    return max(matches, key=len) if matches else None


def method_color(name: str, default: str | None = None) -> str | None:
    """The colour of the method ``name`` starts with (longest match), else ``default``."""
    key = _match(METHOD_COLORS, name)
    return METHOD_COLORS[key] if key else default


def tint(name: str) -> str:
    """The light tint of the method ``name``'s hue: FD's for the blue methods, else RFD's.

    >>> tint("ADA-FFD"), tint("RFD") == TINTS["RFD"]
    ('#9ecae1', True)
    """
    return TINTS["RFD"] if method_color(name) == _RFD_RED else TINTS["FD"]


def contrast(color: str, background: str = BACKGROUND) -> float:
    """WCAG contrast ratio of two ``#rrggbb`` colours (1 to 21; lines want 3 or more).

    >>> round(contrast("#000000"), 1), round(contrast(EXACT_GREY), 2)
    (21.0, 4.0)
    """
    def luminance(hex_color: str) -> float:
        channels = [int(hex_color.lstrip("#")[i:i + 2], 16) / 255 for i in (0, 2, 4)]
        r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    high, low = sorted((luminance(color), luminance(background)), reverse=True)
    return (high + 0.05) / (low + 0.05)
