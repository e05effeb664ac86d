"""Keyboard use of the dashboard: the page tabs as WAI-ARIA tabs, and transport shortcuts.

:class:`Keyboard` is an invisible component whose script

* gives the page tabs (Bokeh's ``.bk-tab`` divs) the tabs pattern: ``role=tablist``,
  ``tab`` and ``tabpanel``, ``aria-selected``, a roving ``tabindex`` (only the selected
  tab is in the Tab order), Left/Right/Home/End move the focus between the tabs and
  Enter/Space open the focused one;
* listens for the shortcuts in :data:`SHORTCUTS` anywhere on the page, except while the
  focus is in a text box, a select, a slider or a tab, or a modifier key is held. A
  shortcut leaves the focus where it was; the server is sent only its name.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from panel.custom import JSComponent

__all__ = ["Keyboard", "SHORTCUTS", "SHORTCUTS_HELP", "DEEP_ALL_JS"]

DEEP_ALL_JS = """
    function deepAll(root, selector, out = []) {
      out.push(...root.querySelectorAll(selector))
      for (const el of root.querySelectorAll("*")) {
        if (el.shadowRoot) deepAll(el.shadowRoot, selector, out)
      }
      return out
    }
"""
"""JavaScript ``deepAll(root, selector)``: every element matching ``selector`` in ``root`` and in
the shadow roots below it (Bokeh draws its widgets inside shadow roots)."""

SHORTCUTS = {" ": "toggle", "ArrowRight": "step", "ArrowLeft": "back"}
"""Key (``KeyboardEvent.key``) to the action it sends."""

SHORTCUTS_HELP = ("Keyboard: **Space** play/pause · **→** step · **←** back (not while typing "
                  "or on a slider) · **←/→** then **Enter** on the page tabs changes page.")
"""The line shown under the transport bar."""


class Keyboard(JSComponent):
    """The keyboard behaviour of one session's page (renders an empty ``span``).

    ``actions`` maps an action name of :data:`SHORTCUTS` (``toggle``, ``step``, ``back``)
    to the function it calls; a message naming anything else is ignored.

    >>> calls = []
    >>> keys = Keyboard({"step": lambda: calls.append("step")})
    >>> keys._handle_msg({"action": "step"}); keys._handle_msg({"action": "rm -rf"})
    >>> calls
    ['step']
    """

    _esm = DEEP_ALL_JS + """
    const KEYS = %s
    const TEXT_ROLES = ["slider", "textbox", "combobox", "spinbutton", "listbox", "option",
                        "tab", "menuitem", "searchbox"]


    function tabsOf(header) {
      return Array.from(header.querySelectorAll(".bk-tab"))
    }

    function decorate() {
      for (const header of deepAll(document, ".bk-header")) {
        const list = header.querySelector(".bk-headers") || header
        const tabs = tabsOf(header)
        if (tabs.length === 0) continue
        const root = header.getRootNode()
        const uid = header.dataset.tabsId || (header.dataset.tabsId = "tabs" + Math.random().toString(36).slice(2, 8))
        if (list.getAttribute("role") !== "tablist") list.setAttribute("role", "tablist")
        const panels = Array.from(header.parentNode.children).filter(
          el => el !== header && el.tagName === "DIV")
        tabs.forEach((tab, i) => {
          const selected = tab.classList.contains("bk-active")
          const set = (name, value) => { if (tab.getAttribute(name) !== value) tab.setAttribute(name, value) }
          set("role", "tab")
          set("id", uid + "-tab-" + i)
          set("aria-selected", String(selected))
          set("tabindex", selected ? "0" : "-1")
          if (panels[i]) {
            set("aria-controls", uid + "-panel-" + i)
            panels[i].id = uid + "-panel-" + i
            panels[i].setAttribute("role", "tabpanel")
            panels[i].setAttribute("aria-labelledby", uid + "-tab-" + i)
          }
        })
        if (!header.dataset.keyboard) {
          header.dataset.keyboard = "1"
          header.addEventListener("keydown", event => onTabKey(header, event))
        }
      }
    }

    function onTabKey(header, event) {
      const tabs = tabsOf(header)
      const i = tabs.indexOf(event.composedPath()[0])
      if (i < 0 || event.altKey || event.ctrlKey || event.metaKey) return
      const move = {ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: tabs.length - 1}
      if (event.key in move) {
        const next = tabs[(move[event.key] + tabs.length) %% tabs.length]
        tabs.forEach(tab => tab.setAttribute("tabindex", tab === next ? "0" : "-1"))
        next.focus()
      } else if (event.key === "Enter" || event.key === " ") {
        tabs[i].click()
        // the headers may be redrawn: keep the focus on the opened tab
        setTimeout(() => {
          decorate()
          const now = tabsOf(header)[i]
          if (now && header.getRootNode().activeElement !== now) now.focus()
        }, 50)
      } else {
        return
      }
      event.preventDefault()
      event.stopPropagation()
    }

    function typing(el) {
      if (!el || el.nodeType !== 1) return false
      if (["INPUT", "TEXTAREA", "SELECT"].includes(el.tagName) || el.isContentEditable) return true
      const role = el.getAttribute("role")
      if (TEXT_ROLES.includes(role)) return true
      return el.closest(".noUi-target, .bk-tab, [role=slider], [role=tab]") !== null
    }

    function pressable(el) {
      if (!el || el.nodeType !== 1) return false
      return ["BUTTON", "A", "SUMMARY"].includes(el.tagName) ||
        ["button", "checkbox", "radio", "switch", "link"].includes(el.getAttribute("role"))
    }

    export function render({ model }) {
      decorate()
      const timer = setInterval(decorate, 400)
      const onKey = event => {
        if (event.defaultPrevented || event.altKey || event.ctrlKey || event.metaKey ||
            event.shiftKey || event.isComposing) return
        const action = KEYS[event.key]
        if (action === undefined) return
        const target = event.composedPath()[0]
        if (typing(target)) return
        if (event.key === " " && pressable(target)) return  // Space presses that button
        event.preventDefault()  // no scrolling; the focus stays where it is
        model.send_msg({action})
      }
      document.addEventListener("keydown", onKey)
      model.on("remove", () => { clearInterval(timer); document.removeEventListener("keydown", onKey) })
      return document.createElement("span")
    }
    """ % json.dumps(SHORTCUTS)

    def __init__(self, actions: Mapping[str, Callable[[], object]], **params):
        super().__init__(**params)
        self._actions = dict(actions)

    def _handle_msg(self, msg) -> None:
        """A message of the browser's script: ``{"action": name}``, checked against ``actions``."""
        if isinstance(msg, dict) and isinstance(msg.get("action"), str):
            action = self._actions.get(msg["action"])
            if action is not None and msg["action"] in SHORTCUTS.values():
                action()
