""""Predict, then play" (explorer/dashboard/predict.py) without a browser: commit locks the
choice, the reveal names the prediction, the answer and the gap at the row it was made (by
itself at the end of the stream, or "Reveal now" before it), Back hides it; the committed
choice goes into the URL as ``predict`` and a link restores it per page; a bad ``predict``
is dropped with a message naming the key; texts are escaped."""

from __future__ import annotations

import pytest
from panel.io.location import Location

from explorer.dashboard.app import PAGES, Dashboard
from explorer.dashboard.predict import NO_CHOICE, ChoiceGroup, PredictPanel
from explorer.dashboard.settings import Settings
from explorer.predictions import PREDICTIONS, Prediction

SMALL = "n=300&d=20&m=5"


def sketching_panel():
    from explorer.dashboard.pages.sketching import SketchingPage
    page = SketchingPage(Settings(n=60, d=8, m=4))
    return page, PredictPanel(page)


def test_commit_locks_the_choice_and_says_it():
    page, panel = sketching_panel()
    panel.commit()
    assert "Choose an answer first" in panel.feedback.text and panel.committed == NO_CHOICE
    panel.choose(2)
    panel.commit()
    choices = PREDICTIONS["sketching"].choices(page)
    assert panel.committed == 2 and panel.locked_text() == f"Your prediction: {choices[2]}."
    panel.choose(0)  # locked: ignored
    panel.commit()
    assert panel.committed == 2 and panel.chosen == 2
    panel.again()
    assert panel.committed == NO_CHOICE and panel.locked_text() == ""


def test_reveal_now_says_the_row_and_the_end_reveals_by_itself():
    page, panel = sketching_panel()
    panel.reveal()
    assert panel.feedback.text.startswith("Commit a prediction first")
    panel.choose(0)
    panel.commit()
    page.step(20)
    panel.reveal()
    text = panel.feedback.text
    assert text.startswith("Revealed at t = 20 of 60 (before the end).")
    assert "Your prediction: less than a quarter of FD's." in text and "Answer: " in text
    page.step(40)  # the end: revealed again, there
    answer, numbers = PREDICTIONS["sketching"].reveal(page)
    text = panel.feedback.text
    assert text.startswith("Revealed at t = 60 of 60 (the end).") and f"Answer: {answer}." in text
    assert PREDICTIONS["sketching"].gap(page, 0) in text and numbers.partition(": ")[2][1:] in text
    page.reset()  # back to t = 0: the answer is hidden
    assert not panel.revealed and "play to the end" in panel.feedback.text


def test_the_panel_escapes_its_texts_and_starts_closed():
    page, _ = sketching_panel()
    strange = Prediction("<b>watch</b> & see.", "<i>which</i>?", ("<a>", "b"), "loss", lambda p: (1.0, 2.0))
    panel = PredictPanel(page, prediction=strange)
    column = panel.panel()
    assert panel.shown is False and column[1].visible is False
    assert column[1].objects == []  # built when first shown
    panel.shown = True
    assert column[1].visible is True
    guide, group = column[1][0], column[1][1]
    assert "&lt;b&gt;watch&lt;/b&gt; &amp; see." in guide.object and "<b>" not in guide.object
    assert isinstance(group, ChoiceGroup) and group.legend == "<i>which</i>?"  # set as textContent
    assert group.options == ["<a>", "b"] and group.value == NO_CHOICE and not group.disabled
    group.value = 1
    assert panel.chosen == 1
    panel.commit()
    assert group.disabled and "&lt;a&gt;" not in column[1][3].object  # "b" committed
    assert column[1][3].object == "<p>Your prediction: b.</p>"


def test_a_link_restores_the_committed_prediction_of_its_page():
    app = Dashboard()
    location = Location(search="?page=newton&predict=3")
    app.sync_url(location)
    assert app.page == "newton" and app.prediction.predict == 3 and app.messages == []
    panel = PredictPanel(app.active, app.prediction)
    assert panel.committed == 3 and panel.locked_text() == "Your prediction: ADAGRAD."
    assert app.url_query()["predict"] == "3"
    app.page = "sketching"  # another page: its own (none), in the URL too
    assert app.prediction.predict == NO_CHOICE and "predict=-1" in location.search
    sketching = PredictPanel(app.active, app.prediction)
    sketching.choose(1)
    sketching.commit()
    assert "predict=1" in location.search and app.prediction.committed == {"newton": 3, "sketching": 1}
    app.page = "newton"
    assert app.prediction.predict == 3 and "predict=3" in location.search
    again = Dashboard()  # the URL as it is now, in a new session
    again.sync_url(Location(search=location.search))
    assert again.page == "newton" and again.prediction.predict == 3


@pytest.mark.parametrize("value, reason", [
    ("3", "predict must be at most 2"), ("-2", "predict must be at least -1"),
    ("abc", "predict must be an integer in [-1, 2]"), ("true", "predict must be an integer in [-1, 2]"),
    ("1.5", "predict must be an integer")])
def test_a_bad_predict_in_a_link_is_dropped_with_a_message_naming_the_key(value, reason):
    app = Dashboard()
    app.sync_url(Location(search=f"?page=sketching&{SMALL}&predict={value}"))
    assert app.prediction.predict == NO_CHOICE and app.settings.m == 5  # the good values stay
    assert [m for m in app.messages if "predict" in m] == [
        f"URL: predict = {value} was ignored ({reason}); using predict = -1."]


def test_every_page_of_the_dashboard_builds_its_panel():
    app = Dashboard()
    for cls in PAGES:
        app.page = cls.key
        panel = PredictPanel(app.active, app.prediction)
        panel.panel()
        assert app.prediction.param.predict.bounds == (-1, len(PREDICTIONS[cls.key].choices(app.active)) - 1)
