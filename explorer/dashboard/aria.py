"""Accessible names for the controls Bokeh and Panel render without one.

:class:`AriaNames` is an invisible component whose script, on load and then twice a
second (pages are built on their first visit and labels change with the page), walks the
document and the components' open shadow roots and

* names every slider handle (``role=slider``) after its title (the ``m: sketch size ↻``
  above it; a discrete slider's title is the text block just before it);
* names the up and down buttons of every number box ("Increase seed ↻", "Decrease ...");
* takes the list role off the template's sidebar ``ul``, whose children are the sidebar's
  panels, not list items;
* gives every button of a toggle or a button group ``aria-pressed``, its state, kept in
  step with it (a class change is seen at once), and names each button group (``role=group``)
  after the label above it (:func:`~explorer.dashboard.cells.labelled`).

:func:`describe` words a figure for its ``aria-label`` (title, axes, the latest values) and
:class:`LiveSummary` is the polite live region that reads out the page's latest step.

Screen readers then announce each control by the label a sighted user reads; axe-core's
WCAG 2 A/AA rules (``tests/test_dashboard_a11y.py``) find no unnamed control.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import param
from panel.custom import JSComponent

from .keyboard import DEEP_ALL_JS

__all__ = ["AriaNames", "LiveSummary", "describe", "ANNOUNCE_SECONDS"]

ANNOUNCE_SECONDS = 2.0
"""Seconds between two announcements of the live region (and two new figure texts) while playing."""


class AriaNames(JSComponent):
    """Names the page's unnamed Bokeh controls in the browser (renders an empty ``span``).

    >>> "aria-label" in AriaNames._esm
    True
    """

    _esm = DEEP_ALL_JS + """

    function text(el) {
      if (!el) return ""
      const root = el.shadowRoot || el
      const parts = []
      const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT)
      while (walker.nextNode()) {
        const parent = walker.currentNode.parentNode
        if (parent && ["STYLE", "SCRIPT"].includes(parent.nodeName)) continue
        parts.push(walker.currentNode.textContent)
      }
      return parts.join("").replace(/\\s+/g, " ").trim()
    }

    function withoutValue(title) {
      // "m: sketch size ↻: 10" -> "m: sketch size ↻"
      const i = title.lastIndexOf(":")
      return (i > 0 ? title.slice(0, i) : title).trim()
    }

    function sliderName(handle) {
      const root = handle.getRootNode()
      const title = root.querySelector(".bk-slider-title")
      let name = ""
      if (title && title.style.display !== "none") {
        const copy = title.cloneNode(true)
        copy.querySelectorAll(".bk-slider-value").forEach(value => value.remove())
        name = text(copy).replace(/:\\s*$/, "")
      }
      if (!name && root.host) {  // a discrete slider: its title is the block before it
        name = withoutValue(text(root.host.previousElementSibling))
      }
      return name
    }

    function set(el, name, value) {
      if (value && el.getAttribute(name) !== value) el.setAttribute(name, value)
    }

    // a Toggle, or a radio or check button group (Bokeh's models or Panel's own, which
    // render as bk-panel-models-widgets-...): Bokeh marks a pressed button bk-active
    const GROUPS = [".bk-RadioButtonGroup", ".bk-CheckboxButtonGroup",
                    ".bk-panel-models-widgets-RadioButtonGroup",
                    ".bk-panel-models-widgets-CheckboxButtonGroup"].join(", ")
    const TOGGLES = ".bk-Toggle, " + GROUPS
    const watched = new WeakSet()

    function pressed(host) {
      const root = host.shadowRoot || host
      for (const button of root.querySelectorAll("button.bk-btn")) {
        set(button, "aria-pressed", String(button.classList.contains("bk-active")))
      }
      const group = root.querySelector(".bk-btn-group")
      if (group && host.matches(GROUPS)) {  // one named group: "S-FTRL sketch ↻", then its buttons
        set(group, "role", "group")
        set(group, "aria-label", withoutColon(text(host.previousElementSibling)))
      }
    }

    function withoutColon(title) {
      return title.replace(/[:\\s]+$/, "")
    }

    function name() {
      for (const el of deepAll(document, "[role=slider], .bk-spin-btn")) {
        if (el.getAttribute("role") === "slider") {
          set(el, "aria-label", sliderName(el))
        } else {
          const label = el.getRootNode().querySelector("label")
          const what = label ? text(label) : "the value"
          set(el, "aria-label", (el.classList.contains("bk-spin-btn-up") ? "Increase " : "Decrease ") + what)
        }
      }
      for (const host of deepAll(document, TOGGLES)) {
        pressed(host)
        if (!watched.has(host) && host.shadowRoot) {
          watched.add(host)
          new MutationObserver(() => pressed(host)).observe(
            host.shadowRoot, {attributes: true, attributeFilter: ["class"], subtree: true, childList: true})
        }
      }
      for (const list of document.querySelectorAll("#sidebar > ul")) {
        const items = Array.from(list.children).every(child => child.tagName === "LI")
        if (!items) set(list, "role", "none")
      }
    }

    export function render({ model }) {
      name()
      const timer = setInterval(name, 500)
      model.on("remove", () => clearInterval(timer))
      return document.createElement("span")
    }
    """


class LiveSummary(JSComponent):
    """A visually hidden ``aria-live="polite"`` region (``role=status``) showing ``text``.

    The browser shows a new ``text`` at most once every :data:`ANNOUNCE_SECONDS` (a newer
    one waits, and only the latest is shown), so a screen reader is not flooded while
    the stream plays.

    >>> 'aria-live' in LiveSummary._esm
    True
    """

    text = param.String(default="", doc="What the region says (plain text).")

    _stylesheets = [":host { position: absolute !important; width: 1px; height: 1px; overflow: hidden;"
                    " clip: rect(0 0 0 0); clip-path: inset(50%); white-space: nowrap; }"]
    _esm = """
    export function render({ model }) {
      const region = document.createElement("div")
      region.className = "explorer-live"
      region.setAttribute("role", "status")
      region.setAttribute("aria-live", "polite")
      region.style.cssText = "position: absolute; width: 1px; height: 1px; overflow: hidden; " +
        "clip: rect(0 0 0 0); clip-path: inset(50%); white-space: nowrap;"
      region.textContent = model.text
      let shown = performance.now(), timer = null
      const show = () => {
        timer = null
        shown = performance.now()
        if (region.textContent !== model.text) region.textContent = model.text
      }
      model.on("text", () => {
        if (timer === null) timer = setTimeout(show, Math.max(0, shown + WAIT - performance.now()))
      })
      return region
    }
    """.replace("WAIT", str(int(1000 * ANNOUNCE_SECONDS)))


def describe(title: str, layout: Mapping, traces: Sequence[Mapping], over_stream: bool = False) -> str:
    """A figure in words, for its ``aria-label``: the title, what is drawn against what,
    then each named trace's latest value (a curve over the stream: its last finite point,
    at the largest such t) or range (bars, a heatmap).

    >>> describe("Error", {"xaxis": {"title": {"text": "t"}}, "yaxis": {"title": {"text": "error"}}},
    ...          [{"name": "FD", "x": [0, 1, 2], "y": [0.5, 0.25, np.nan]}], over_stream=True)
    'Error. error against t; at t = 1: FD 0.25.'
    """
    axes = [(layout.get(key) or {}).get("title") or {} for key in ("yaxis", "xaxis")]
    y_title, x_title = (axis.get("text", "") if isinstance(axis, Mapping) else str(axis) for axis in axes)
    words, last_t = [], None
    for trace in traces:
        name = trace.get("name")
        if not name or trace.get("visible") in (False, "legendonly"):
            continue
        kind = trace.get("type") or "scatter"
        try:
            values = np.asarray(trace.get("z" if kind == "heatmap" else "y"), dtype=float).ravel()
        except (TypeError, ValueError):
            continue
        shown = np.flatnonzero(np.isfinite(values))
        if shown.size == 0:
            continue
        if kind in ("bar", "heatmap") or not over_stream:
            low, high = values[shown].min(), values[shown].max()
            words.append(f"{name} {shown.size} values from {low:.3g} to {high:.3g}")
            continue
        words.append(f"{name} {values[shown[-1]]:.3g}")
        try:
            t = float(np.asarray(trace.get("x"), dtype=float).ravel()[shown[-1]])
            last_t = t if last_t is None else max(last_t, t)
        except (TypeError, ValueError, IndexError):
            pass
    text = title.strip() or str(((layout.get("title") or {}).get("text")) or "Figure")
    if y_title or x_title:
        text += f". {y_title or 'values'}" + (f" against {x_title}" if x_title else "")
    if words:
        text += (f"; at t = {last_t:g}: " if last_t is not None else ": ") + ", ".join(words)
    return text + "."
