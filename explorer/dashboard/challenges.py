""""Challenges" on a dashboard page: its tasks from :data:`explorer.challenges.CHALLENGES`,
each with a Check button, a feedback line, a hint and a solution.

:class:`ChallengesPanel` is a toggle "Challenges" under the page's figures (the pattern of
:class:`~explorer.dashboard.opened.OpenedUpdate`); pressed, it shows one
:class:`ChallengeItem` per challenge: the task, **Check** (runs the challenge's check on the
page's state now), a :class:`FeedbackLine` that says "solved" or "not yet" with the numbers
measured (a polite live region: a screen reader reads it out), and the toggles **Show
hint** and **Show solution**. Every text is data, never markup (escaped here; the feedback
is set as the element's ``textContent``). All of it is buttons: Tab reaches them, Enter or
Space presses them.

>>> from explorer.challenges import Challenge
>>> class Page:
...     key, t = "demo", 3
>>> c = Challenge("t5", "Step to <t = 5>.", "Step.", "Press Step twice.",
...               lambda page: (page.t >= 5, f"t = {page.t}"))
>>> item = ChallengeItem(Page(), c, number=1)
>>> item.press_check()
>>> item.feedback.text
'not yet: t = 3'
>>> "&lt;t = 5&gt;" in item.task_html()
True
"""

from __future__ import annotations

import html

import panel as pn
import param
from panel.custom import JSComponent

from ..challenges import CHALLENGES, Challenge
from .controls import collapsible
from .cells import switch

__all__ = ["ChallengesPanel", "ChallengeItem", "FeedbackLine"]


class FeedbackLine(JSComponent):
    """A visible ``aria-live="polite"`` line (``role=status``) showing ``text`` as plain text.

    The element stays and only its ``textContent`` changes, so a screen reader announces
    each new text (a region replaced whole is often not announced).

    >>> 'aria-live' in FeedbackLine._esm and 'textContent' in FeedbackLine._esm
    True
    """

    text = param.String(default="", doc="What the line says (plain text).")

    _esm = """
    export function render({ model }) {
      const line = document.createElement("p")
      line.className = "challenge-feedback"
      line.setAttribute("role", "status")
      line.setAttribute("aria-live", "polite")
      line.style.cssText = "margin: 0 0 4px 0; min-height: 1.2em;"
      line.textContent = model.text
      model.on("text", () => { line.textContent = model.text })
      return line
    }
    """


class ChallengeItem(param.Parameterized):
    """One challenge of ``page``: its task (numbered ``number``), Check, the feedback line
    and the hint and solution toggles. :meth:`press_check` is what Check does."""

    show_hint = param.Boolean(default=False, doc="The hint is shown.")
    show_solution = param.Boolean(default=False, doc="The solution is shown.")

    def __init__(self, page, challenge: Challenge, number: int = 1, **params):
        super().__init__(**params)
        self.page, self.challenge, self.number = page, challenge, number
        self.feedback = FeedbackLine(sizing_mode="stretch_width", margin=(0, 10))
        self.hint_pane = pn.pane.HTML(f"<p>Hint: {html.escape(challenge.hint)}</p>",
                                      visible=self.param.show_hint, sizing_mode="stretch_width")
        self.solution_pane = pn.pane.HTML(f"<p>Solution: {html.escape(challenge.solution)}</p>",
                                          visible=self.param.show_solution, sizing_mode="stretch_width")

    def task_html(self) -> str:
        """The task, numbered, its text escaped."""
        return f"<p><strong>{self.number}.</strong> {html.escape(self.challenge.task)}</p>"

    def press_check(self, *_) -> None:
        """Check the challenge on the page now and show the result ("solved: ..." or
        "not yet: ..." with the numbers measured). A check that raises is not hidden."""
        solved, feedback = self.challenge.check(self.page)
        self.feedback.text = f"{'solved' if solved else 'not yet'}: {feedback}"

    def panel(self) -> pn.Column:
        """The task, then a row of Check, Show hint and Show solution, the feedback line,
        and the hint and solution (each shown while its toggle is pressed)."""
        check = pn.widgets.Button(label="Check", color="primary",
                                  description=f"Check challenge {self.number} on the page as it is now")
        check.on_click(self.press_check)
        buttons = pn.Row(check, switch(self.param.show_hint, "Show hint"),
                         switch(self.param.show_solution, "Show solution"), margin=(0, 5))
        return pn.Column(pn.pane.HTML(self.task_html(), sizing_mode="stretch_width", margin=(5, 10, 0, 10)),
                         buttons, self.feedback, self.hint_pane, self.solution_pane,
                         sizing_mode="stretch_width")


class ChallengesPanel(param.Parameterized):
    """The toggle "Challenges" and, while pressed, one :class:`ChallengeItem` per challenge
    of the page (``challenges``: the page's own from :data:`~explorer.challenges.CHALLENGES`
    unless given)."""

    shown = param.Boolean(default=False, doc="The challenges are shown (the toggle is pressed).")

    def __init__(self, page, challenges: tuple[Challenge, ...] | None = None, **params):
        super().__init__(**params)
        self.page = page
        chosen = CHALLENGES.get(page.key, ()) if challenges is None else challenges
        self.items = [ChallengeItem(page, c, number=i) for i, c in enumerate(chosen, start=1)]

    def panel(self) -> pn.Column:
        """The toggle, and below it (while pressed) every challenge."""
        return collapsible(self.param.shown, "Challenges", lambda: [item.panel() for item in self.items])
