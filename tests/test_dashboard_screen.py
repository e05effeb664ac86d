"""What the dashboard shows agrees with what the algorithms did (no browser).

Notes, sidebar values and axis ranges are checked against the sketch API and the page's
own history, so a note cannot claim "nothing is shrunk" while FD shrinks.
"""

from __future__ import annotations

import numpy as np
import pytest

from explorer import FrequentDirections
from explorer.dashboard import Dashboard
from explorer.streams import load_stream

NO_SHRINK = "nothing is ever shrunk away"


def small_app(**settings) -> Dashboard:
    """A dashboard on a short stream (d = 12), fast enough to run to the end in a test."""
    app = Dashboard()
    app.settings.param.update({"n": 200, "d": 12, "m": 4, **settings})
    return app


@pytest.mark.timeout(60)
@pytest.mark.parametrize("m", [11, 12, 13])
def test_the_no_shrink_note_shows_exactly_when_fd_never_shrinks(m):
    """FD's shrink takes away sigma_m^2, which is 0 only while the rank is below m: at
    m = d it shrinks (delta > 0), at m = d + 1 it never does."""
    app = small_app(m=m)
    X = load_stream("low rank + noise", n=200, d=12, seed=0)
    for fast in (False, True):
        fd = FrequentDirections(12, m, fast=fast)
        fd.extend(X)
        assert (fd.delta_total == 0.0) == (m > 12)
    assert any(NO_SHRINK in note for note in app.notes) == (m > 12)
    app.transport.seek(200)
    sketches = app.active.sketches
    for variant in ("exact", "fast"):
        assert (sketches.fd[variant].delta_total > 0) == (m <= 12)
        assert (sketches.rfd[variant].delta_total > 0) == (m <= 12)


def csv_of(rows: np.ndarray) -> bytes:
    return "\n".join(",".join(f"{v:.6f}" for v in row) for row in rows).encode()


@pytest.mark.timeout(60)
def test_an_upload_with_d_equal_to_m_is_not_called_shrink_free():
    app = Dashboard()  # the default m = 10
    rows = np.random.default_rng(3).standard_normal((200, 10))
    assert app.upload("mine.csv", csv_of(rows))
    assert app.settings.m == 10 and not any(NO_SHRINK in note for note in app.notes)
    app.transport.seek(200)
    assert app.active.sketches.fd["exact"].delta_total > 0
