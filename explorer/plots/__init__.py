"""Every figure of the lessons and the dashboard: arrays in, Plotly figures out.

Compute and view are separate (STYLE.md): the lessons and :mod:`explorer.race` compute
numpy arrays, and these functions only draw them; nothing here calls ``show()``.

- :mod:`.style`: colours (one per method and per concept), layout and heights, defined
  once (:func:`method_color`).
- :mod:`.charts`: generic builders (:func:`line_chart`, :func:`curves_chart` (each curve
  on its own x), :func:`band_chart` (mean and min-max band over seeds), :func:`bar_chart`,
  :func:`shrink_spectrum`, :func:`heatmap`) and :func:`event_marks`, the one way to mark
  events (shrinks, divergences, switches, changes of leader) on a time axis.
- :mod:`.panels`: :func:`small_multiples`, one panel per data set or sketch size.
- :mod:`.bounds`: :func:`error_bound_chart`, an error against its bounds, with a panel of
  fractions of the bound where ``error <= Δ <= bound`` shows.
- :mod:`.graphs`: :func:`merge_tree` (a tree of merged sketches, each node's delta
  and rows) and :func:`task_graph` (a Dask task graph in layers, no graphviz).

The dashboard's per-page figure modules (``explorer/dashboard/pages/*_figures.py``)
draw on these.
"""

from .bounds import ERROR_NAMES, error_bound_chart
from .charts import (Events, as_vector, band_chart, bar_chart, curves_chart, event_marks, heatmap, line_chart,
                     series_colors, shrink_spectrum)
from .graphs import merge_tree, task_graph
from .panels import small_multiples
from .style import (BASELINE_GREY, BOUND_BLACK, COLORS, COMPARATOR_GREY, CONCEPT_COLORS, EVENT_STYLES,
                    EXACT_GREY, GFD_HALVES, GUIDE_GREY, HEIGHT, LAYOUT, MARGIN, MARKS_SHOWN, METHOD_COLORS,
                    TINTS, contrast, method_color, tint)

__all__ = ["line_chart", "curves_chart", "band_chart", "bar_chart", "shrink_spectrum", "heatmap", "small_multiples",
           "merge_tree", "task_graph", "as_vector", "error_bound_chart", "ERROR_NAMES", "COLORS", "COMPARATOR_GREY",
           "EXACT_GREY", "HEIGHT", "LAYOUT", "MARGIN",
           "METHOD_COLORS", "method_color", "BASELINE_GREY", "BOUND_BLACK", "CONCEPT_COLORS",
           "GFD_HALVES", "GUIDE_GREY", "TINTS", "contrast", "tint", "series_colors", "Events",
           "event_marks", "EVENT_STYLES", "MARKS_SHOWN"]
