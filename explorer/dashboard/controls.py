"""Controls bound to parameters, and the log-scale switch of a figure, written once.

- :func:`bind`: the two-way binding of a widget and a parameter (of the shared
  :class:`~explorer.dashboard.settings.Settings` or of a page): the widget sets the
  parameter, and a change of the parameter from elsewhere (a link, a preset button)
  shows on the widget;
- :func:`collapsible`: a toggle and the panes it shows, built when first shown;
- :func:`grid_options`: a choice of meaningful values plus the current one, labelled;
- :func:`log_axis` and :func:`log_values`: the Plotly axis a "log scale" switch asks
  for, and values such an axis can draw (the others become gaps).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import panel as pn
import param

from .cells import switch
from .live import finite

__all__ = ["bind", "collapsible", "grid_options", "log_axis", "log_values"]


def bind(widget, target: param.Parameterized, name: str, *, throttled: bool = False,
         shown: bool = True, follow: Callable[[object], dict] | None = None,
         attribute: str = "value", read: Callable[[object], object] | None = None):
    """Bind ``widget.value`` and ``target.<name>`` both ways; returns the widget.

    Parameters: ``throttled``: the widget sets the parameter on ``value_throttled`` (a
    slider: when released) instead of every ``value``; ``shown``: False binds one way
    only, widget to parameter; ``follow(value)``: the widget parameters to update when
    the parameter changes (e.g. ``{"options": ..., "value": value}`` to add a value off
    the widget's grid), by default ``widget.value = value``; ``attribute``: the widget's
    parameter bound instead of ``value`` (``"active"`` of tabs), with ``read(new)`` the
    target's value for the widget's (by default the same).

    >>> import panel as pn
    >>> class Knobs(param.Parameterized):
    ...     eta = param.Number(0.1)
    >>> knobs = Knobs()
    >>> box = bind(pn.widgets.FloatInput(value=0.1), knobs, "eta")
    >>> box.value = 0.5; knobs.eta
    0.5
    >>> knobs.eta = 2.0; box.value
    2.0
    """
    source = "value_throttled" if throttled else attribute
    read = read or (lambda value: value)
    widget.param.watch(lambda event: setattr(target, name, read(event.new)), source)
    if shown and follow is None:
        target.param.watch(lambda event: setattr(widget, attribute, event.new), name)
    elif shown:
        target.param.watch(lambda event: widget.param.update(**follow(event.new)), name)
    return widget


def collapsible(shown: param.Parameter, label: str, build: Callable[[], list]) -> pn.Column:
    """The toggle ``label`` of the Boolean parameter ``shown`` and below it, while pressed,
    the panes ``build()`` returns, built when first shown: a closed panel adds one button
    to the page, not its contents.

    >>> class Panel(param.Parameterized):
    ...     shown = param.Boolean(False)
    >>> box = Panel()
    >>> column = collapsible(box.param.shown, "More", lambda: [pn.pane.HTML("<p>details</p>")])
    >>> len(column[1].objects), column[1].visible
    (0, False)
    >>> box.shown = True
    >>> len(column[1].objects), column[1].visible
    (1, True)
    """
    body = pn.Column(visible=shown, sizing_mode="stretch_width")

    def fill(*_) -> None:
        if getattr(shown.owner, shown.name) and not body.objects:
            # without a design of their own, as the panes made before the template rendered:
            # made after it with the session's, each would carry Bootstrap's whole stylesheet
            # in its shadow root (a legend in 24 px, radios run together)
            with pn.config.set(design=None):
                body.objects = list(build())
    shown.owner.param.watch(fill, shown.name)
    fill()
    return pn.Column(switch(shown, label), body, sizing_mode="stretch_width")


def grid_options(choices: Iterable[float], value: float) -> dict[str, float]:
    """``{label: value}`` of ``choices`` and ``value`` (added when off the grid), ascending.

    >>> grid_options((0.1, 1.0), 0.5)
    {'0.1': 0.1, '0.5': 0.5, '1': 1.0}
    """
    return {f"{v:g}": float(v) for v in sorted({*choices, float(value)})}


def log_axis(log: bool) -> dict:
    """The Plotly axis settings of a log-scale switch: log with a tick per decade, or linear.

    >>> log_axis(True), log_axis(False)
    ({'type': 'log', 'dtick': 1}, {'type': 'linear', 'dtick': None})
    """
    return {"type": "log", "dtick": 1} if log else {"type": "linear", "dtick": None}


def log_values(values, *, keep_inf: bool = False) -> np.ndarray:
    """``values`` as a float array a log axis draws: the non-positive ones, NaN and (unless
    ``keep_inf``) infinities become NaN, a gap.

    >>> log_values([0.0, 2.0, np.inf, -1.0]).tolist(), log_values([np.inf], keep_inf=True).tolist()
    ([nan, 2.0, nan, nan], [inf])
    """
    values = np.asarray(values, dtype=float) if keep_inf else finite(values)
    return np.where(values > 0, values, np.nan)
