"""Accessible names for the controls Bokeh and Panel render without one.

:class:`AriaNames` is an invisible component whose script, on load and then twice a
second (pages are built on their first visit and labels change with the page), walks the
document and the components' open shadow roots and

* names every slider handle (``role=slider``) after its title (the ``m: sketch size ↻``
  above it; a discrete slider's title is the text block just before it);
* names the up and down buttons of every number box ("Increase seed ↻", "Decrease ...");
* takes the list role off the template's sidebar ``ul``, whose children are the sidebar's
  panels, not list items.

Screen readers then announce each control by the label a sighted user reads; axe-core's
WCAG 2 A/AA rules (``tests/test_dashboard_a11y.py``) find no unnamed control.
"""

from __future__ import annotations

from panel.custom import JSComponent

__all__ = ["AriaNames"]


class AriaNames(JSComponent):
    """Names the page's unnamed Bokeh controls in the browser (renders an empty ``span``).

    >>> "aria-label" in AriaNames._esm
    True
    """

    _esm = """
    function deepAll(root, selector, out = []) {
      out.push(...root.querySelectorAll(selector))
      for (const el of root.querySelectorAll("*")) {
        if (el.shadowRoot) deepAll(el.shadowRoot, selector, out)
      }
      return out
    }

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
