""""Predict, then play" on a dashboard page: its question from
:data:`explorer.predictions.PREDICTIONS`, committed before the stream is played and revealed
at its end.

:class:`PredictPanel` is a toggle "Predict, then play" under the page's figures, next to
"Challenges", closed by default (the whole thing is optional). Pressed, it shows the guide
(what to watch and when), the question as a group of radio buttons (:class:`ChoiceGroup`:
a ``fieldset`` whose ``legend`` is the question; Tab reaches it, the arrow keys choose),
**Commit prediction** (locks the choice and says it as text) and **Reveal now**. When the
page reaches the end of its stream with a committed prediction, the answer is revealed by
itself; **Reveal now** reveals it at the current row and says so. The reveal (the
prediction, the answer and the gap in numbers) is a
:class:`~explorer.dashboard.challenges.FeedbackLine`, a polite live region. Every text is
data, never markup.

:class:`Commitments` holds each page's committed choice; the active page's is ``predict``,
kept in the URL as ``?predict=<index>`` (-1: none) by :class:`~explorer.dashboard.app.Dashboard`,
so a shared link restores it.

>>> from explorer.dashboard.pages.sketching import SketchingPage
>>> from explorer.dashboard.settings import Settings
>>> page = SketchingPage(Settings(n=60, d=8, m=4))
>>> panel = PredictPanel(page)
>>> panel.choose(1)
>>> panel.commit()
>>> panel.locked_text()
"Your prediction: between a quarter and three quarters of FD's."
>>> _ = page.step(60)  # the end of the stream: revealed by itself
>>> panel.feedback.text.startswith("Revealed at t = 60 of 60 (the end).")
True
"""

from __future__ import annotations

import html
from collections.abc import Callable

import panel as pn
import param
from panel.custom import JSComponent

from ..predictions import PREDICTIONS, Prediction
from .challenges import FeedbackLine
from .controls import collapsible

__all__ = ["PredictPanel", "Commitments", "ChoiceGroup", "NO_CHOICE"]

NO_CHOICE = -1
"""``predict`` when nothing is committed."""


class Commitments(param.Parameterized):
    """Each page's committed choice (``committed``, by page key) and the active page's as
    ``predict`` (what the URL keeps). ``active()`` returns the active page; call
    :meth:`follow` when it changes (the bounds of ``predict`` become its choices').

    >>> class Page: key, t, n_rows = "sketching", 0, 10
    >>> c = Commitments(lambda: Page())
    >>> c.predict = 2
    >>> c.committed, c.param.predict.bounds
    ({'sketching': 2}, (-1, 2))
    """

    predict = param.Integer(default=NO_CHOICE, bounds=(NO_CHOICE, None), doc=(
        "The active page's committed prediction, an index of its choices (-1: none)."))
    committed = param.Dict(default={}, doc="Each page's committed prediction, by page key.")

    def __init__(self, active: Callable[[], object], **params):
        super().__init__(**params)
        self.active = active
        self.follow()
        self.param.watch(self._store, "predict")

    @classmethod
    def of(cls, app) -> "Commitments":
        """The commitments of a :class:`~explorer.dashboard.app.Dashboard`: its active page,
        followed on every page change."""
        commitments = cls(lambda: app.active)
        app.param.watch(commitments.follow, "page")
        return commitments

    def follow(self, *_) -> None:
        """The active page changed: ``predict`` ranges over its choices and shows its commitment."""
        page = self.active()
        prediction = PREDICTIONS.get(page.key)
        choices = len(prediction.choices(page)) if prediction is not None else 0
        self.param.predict.bounds = (NO_CHOICE, choices - 1)
        self.predict = self.committed.get(page.key, NO_CHOICE)

    def _store(self, event) -> None:
        self._record(self.active().key, event.new)

    def _record(self, key: str, choice: int) -> None:
        committed = {k: v for k, v in self.committed.items() if k != key}
        self.committed = committed if choice == NO_CHOICE else {**committed, key: choice}

    def choice_of(self, key: str) -> int:
        """Page ``key``'s committed choice (-1: none)."""
        return self.committed.get(key, NO_CHOICE)

    def commit(self, key: str, choice: int) -> None:
        """Commit ``choice`` (-1: none) for page ``key`` (through ``predict`` if it is active)."""
        if self.active().key == key:
            self.predict = choice
        else:
            self._record(key, choice)


class ChoiceGroup(JSComponent):
    """Radio buttons in a ``fieldset`` whose ``legend`` is the question: one ``value`` (an
    index of ``options``, -1: none), texts shown as plain text. The browser's own radios:
    Tab enters the group, the arrow keys move and choose.

    >>> 'legend' in ChoiceGroup._esm and 'textContent' in ChoiceGroup._esm
    True
    """

    legend = param.String(default="", doc="The question (the group's accessible name).")
    options = param.List(default=[], item_type=str, doc="The choices' texts.")
    value = param.Integer(default=NO_CHOICE, doc="The chosen option's index (-1: none).")
    disabled = param.Boolean(default=False, doc="Locked: the choice cannot change.")

    _stylesheets = [""":host { display: block; }
    fieldset { border: 1px solid #ced4da; border-radius: 4px; margin: 0 0 6px 0; padding: 4px 10px 6px; }
    legend { font-size: 1em; font-weight: 600; float: none; width: auto; padding: 0 4px; margin: 0; }
    label { display: block; margin: 2px 0; cursor: pointer; }
    input { margin-right: 6px; }
    input:focus-visible { outline: 3px solid #1f3b57; outline-offset: 1px; }"""]
    _esm = """
    let groups = 0
    export function render({ model }) {
      const fieldset = document.createElement("fieldset")
      const legend = document.createElement("legend")
      const name = `prediction-${++groups}`
      const draw = () => {
        fieldset.replaceChildren(legend)
        legend.textContent = model.legend
        model.options.forEach((text, i) => {
          const label = document.createElement("label")
          const input = document.createElement("input")
          input.type = "radio"
          input.name = name
          input.value = String(i)
          input.checked = i === model.value
          input.disabled = model.disabled
          input.addEventListener("change", () => { if (input.checked) model.value = i })
          label.append(input, document.createTextNode(text))
          fieldset.append(label)
        })
      }
      draw()
      model.on(["legend", "options", "value", "disabled"], draw)
      return fieldset
    }
    """


class PredictPanel(param.Parameterized):
    """The toggle "Predict, then play" and, while pressed, ``page``'s prediction (``prediction``:
    its own from :data:`~explorer.predictions.PREDICTIONS` unless given); the commitment lives
    in ``commitments`` (the dashboard's, kept in the URL; a private one if None).
    :meth:`choose`, :meth:`commit`, :meth:`reveal` and :meth:`again` are what the controls do."""

    shown = param.Boolean(default=False, doc="The prediction is shown (the toggle is pressed).")
    chosen = param.Integer(default=NO_CHOICE, doc="The choice selected, not yet committed.")
    revealed = param.Boolean(default=False, doc="The answer is shown.")

    def __init__(self, page, commitments: Commitments | None = None,
                 prediction: Prediction | None = None, **params):
        super().__init__(**params)
        self.page = page
        self.prediction = PREDICTIONS[page.key] if prediction is None else prediction
        self.commitments = Commitments(lambda: page) if commitments is None else commitments
        self.feedback = FeedbackLine(sizing_mode="stretch_width", margin=(0, 10))
        self.chosen = self.committed
        self.commitments.param.watch(self._commitment_changed, "committed")
        page.param.watch(self._moved, "t")

    @property
    def committed(self) -> int:
        """The committed choice on this page (-1: none)."""
        return self.commitments.choice_of(self.page.key)

    def locked_text(self) -> str:
        """The committed prediction as a sentence (empty when there is none)."""
        choice = self.committed
        if choice == NO_CHOICE:
            return ""
        return f"Your prediction: {self.prediction.choices(self.page)[choice]}."

    def choose(self, choice: int) -> None:
        """Select ``choice`` (an index of the choices); ignored once committed."""
        if self.committed == NO_CHOICE:
            self.chosen = int(choice)

    def commit(self, *_) -> None:
        """Lock the selected choice (nothing selected: say so)."""
        if self.committed != NO_CHOICE:
            return
        if not 0 <= self.chosen < len(self.prediction.choices(self.page)):
            self.feedback.text = "Choose an answer first, then commit it."
            return
        self.commitments.commit(self.page.key, self.chosen)

    def reveal(self, *_) -> None:
        """Show the prediction, the answer and the gap in numbers, at the current row."""
        choice = self.committed
        if choice == NO_CHOICE:
            self.feedback.text = "Commit a prediction first: the answer is revealed after it."
            return
        answer, numbers = self.prediction.reveal(self.page)
        when, _, values = numbers.partition(": ")
        self.feedback.text = (f"Revealed at {when}. {self.locked_text()} Answer: {answer}. "
                              f"{self.prediction.gap(self.page, choice)} {values[:1].upper()}{values[1:]}")
        self.revealed = True

    def again(self, *_) -> None:
        """Take the prediction back: choose and commit anew (e.g. after a Reset)."""
        self.commitments.commit(self.page.key, NO_CHOICE)

    def _commitment_changed(self, *_) -> None:
        if self.committed == NO_CHOICE and self.revealed:
            self.revealed = False
            self.feedback.text = ""
        if self.committed != NO_CHOICE:
            self.chosen = self.committed

    def _moved(self, event) -> None:
        """The page moved: at the end of its stream a committed prediction is revealed."""
        if self.committed == NO_CHOICE:
            return
        if event.new >= self.page.n_rows > event.old:  # even if revealed before: now at the end
            # t is set before the row's point is recorded: record it now, as the step (or
            # the transport, after a step that does not record) does next (then a no-op)
            self.page.record_current()
            self.reveal()
        elif event.new < event.old and self.revealed:  # Back or Reset: the answer is hidden
            self.revealed = False
            self.feedback.text = f"t = {event.new}: play to the end to reveal the answer again."

    def panel(self) -> pn.Column:
        """The toggle, and below it (while pressed) the guide, the question, the buttons,
        the locked prediction and the reveal (built when first shown)."""
        return collapsible(self.param.shown, "Predict, then play", self._body)

    def _body(self) -> list:
        choices = ChoiceGroup(legend=self.prediction.question, options=list(self.prediction.choices(self.page)),
                              value=self.chosen, disabled=self.committed != NO_CHOICE,
                              sizing_mode="stretch_width", margin=(0, 10))
        choices.param.watch(lambda event: self.choose(event.new), "value")
        commit = pn.widgets.Button(label="Commit prediction", color="primary",
                                   description="Lock your answer before you play the stream")
        commit.on_click(self.commit)
        reveal = pn.widgets.Button(label="Reveal now", description=(
            "Show the answer at the current row (it is revealed by itself at the end of the stream)"))
        reveal.on_click(self.reveal)
        again = pn.widgets.Button(label="Predict again", description="Take your prediction back")
        again.on_click(self.again)
        locked = pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 10))

        def show(*_):
            committed = self.committed != NO_CHOICE
            choices.param.update(value=self.chosen, disabled=committed)
            commit.disabled, reveal.disabled, again.disabled = committed, not committed, not committed
            locked.object = f"<p>{html.escape(self.locked_text())}</p>" if committed else ""
        show()
        self.param.watch(show, ["chosen"])
        self.commitments.param.watch(show, "committed")
        guide = pn.pane.HTML(f"<p><strong>What to watch:</strong> {html.escape(self.prediction.guide)}</p>",
                             sizing_mode="stretch_width", margin=(5, 10, 0, 10))
        return [guide, choices, pn.Row(commit, reveal, again, margin=(0, 5)), locked, self.feedback]
