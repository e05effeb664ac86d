"""Fuzz registry entries for the command line, the dashboard's links and the learners' inputs
at scale extremes (tests/fuzz_registry.py collects them).

- CLI: ``explorer.cli.main(argv)`` must exit 0 (and whatever it wrote reads back as a sound
  sketch of bounded size, never through an existing path without ``--force``) or exit 2 with
  one line on stderr and every file as it was; argparse errors included. Only ``sketch``
  runs: ``serve``, ``lab`` and ``bench`` appear only with arguments argparse refuses.
- Links: ``Dashboard().sync_url(Location(search=...))`` never raises; every value of a
  synced key is applied or explained (``URL: key ...``), and no setting takes a value of
  another type than its default's (a bool where a number belongs breaks the widget).
- Learners: each zoo learner (and SketchedOnlineNewton with automatic settings) fed a first
  row scaled by 10^-320 .. 10^300, then 30 ordinary rows: refused cleanly or accepted with a
  finite state, predictions of SON inside its slab [-C, C], and the learner not dead (most
  ordinary rows accepted); and each integer constructor argument set to 10^9 or 10^12:
  refused, or one round within the time limit.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
import resource
import signal
from pathlib import Path
from urllib.parse import parse_qsl, urlencode

import numpy as np
from hypothesis import strategies as st
from panel.io.location import Location

from explorer import SketchedOnlineNewton
from explorer.cli import main
from explorer.dashboard.app import PAGES, Dashboard
from explorer.dashboard.page import Page
from explorer.dashboard.settings import URL_NAMES
from explorer.sketch import from_bytes
from explorer.state import nonfinite_entries
from fuzz_checks import fingerprint, sound_sketch
from fuzz_entries import _data_attacks, _scale_extremes, data_samples, sketch_samples
from fuzz_inputs import Payload, materialize, mutations
from stateful_zoo import D, FEEDS, ROUNDS, rows
from test_fuzz_stateful import constructor_arguments, keeps_working_as

__all__ = ["cli_entries", "link_entries", "learner_entries"]


# -- the command line ------------------------------------------------------------------------

class BadExit(Exception):
    """An exit that is neither 0 nor 2 with one line on stderr."""


def _cli_setup(value, scratch: Path) -> dict:
    argv, data, options = value
    places = {"{data}": str(scratch / "data.npy"), "{out}": str(scratch / "out.sketch"),
              "{dir}": str(scratch / "folder"), "{dangling}": str(scratch / "link.sketch"),
              "{long}": str(scratch / ("x" * 300 + ".sketch")), "{nodir}": str(scratch / "no" / "out.sketch")}
    if data is not None:
        places["{data}"] = str(materialize(data, scratch, "data"))
    (scratch / "folder").mkdir()
    (scratch / "link.sketch").symlink_to(scratch / "gone" / "x.sketch")
    if "out exists" in options:
        (scratch / "out.sketch").write_bytes(sketch_samples()[0])
    argv = [places.get(token, token) for token in argv]
    outs = [argv[i + 1] for i, token in enumerate(argv[:-1]) if token == "--out"]
    return {"argv": argv, "out": outs[-1] if outs else None, "options": options,
            "existed": bool(outs) and _lexists(outs[-1])}


def _lexists(path: str) -> bool:
    try:
        return Path(path).is_symlink() or Path(path).exists()
    except OSError:  # a name too long
        return False


def _cli_call(subject, value, scratch):
    out, err = io.StringIO(), io.StringIO()
    limit = subject["options"].get("file size limit") if isinstance(subject["options"], dict) else None
    old_limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    try:
        if limit:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, old_limit[1]))
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(subject["argv"]))
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, old_limit)
        signal.signal(signal.SIGXFSZ, old_handler)
    lines = [line for line in err.getvalue().splitlines() if line.strip()]
    if code == 2 and len(lines) == 1:
        raise ValueError(lines[0])
    if code != 0:
        raise BadExit(f"exit {code}, {len(lines)} stderr line(s): {' | '.join(lines[:3])[:300]}")
    return out.getvalue()


def _cli_accept(subject, value, stdout, scratch):
    target = subject["out"]
    if target is None:
        return
    if "-h" in subject["argv"]:
        return  # help printed, nothing run
    assert not (subject["existed"] and "--force" not in subject["argv"]), (
        f"wrote to {Path(target).name[:40]}, which existed (or was a symlink), without --force")
    data = Path(target).read_bytes()
    source = Path(subject["argv"][1])
    bound = 16 * (source.stat().st_size if source.is_file() else 0) + 200_000
    assert len(data) <= bound, f"wrote {len(data)} bytes for {source.stat().st_size} bytes of input"
    sound_sketch(from_bytes(data))


_BASE = ("sketch", "{data}", "--m", "3")
_VOCAB = ("{data}", "--m", "3", "2", "1", "0", "-1", "10000000", "1e3", "x", "", "--rfd", "--alpha0", "nan",
          "inf", "-1e300", "0.5", "--exact", "--workers", "--split-every", "--chunk-rows", "--key", "X", "--top",
          "--out", "{out}", "{dir}", "{dangling}", "{long}", "{nodir}", "--force", "--progress", "--no-progress",
          "-h", "--bogus")


def _argv_cases():
    tokens = st.lists(st.sampled_from(_VOCAB), max_size=6)
    argv = st.tuples(st.sampled_from([("sketch",), _BASE]), tokens, st.booleans()).map(
        lambda parts: (*parts[0], *parts[1], *(("--out", "{out}") if parts[2] else ())))
    return st.tuples(argv, st.sampled_from(["none", "out exists"])).map(
        lambda case: (case[0], data_samples()[0], {case[1]: True}))


def _argparse_errors():
    cases = [(), ("frobnicate",), ("serve", "--port", "abc"), ("serve", "--port", "0"), ("lab", "--port", "70000"),
             ("sketch",), ("sketch", "{data}"), ("sketch", "{data}", "--m", "abc"), ("sketch", "{data}", "--m"),
             ("--bogus",), ("sketch", "{data}", "--m", "3", "--workers", "0")]
    return [(argv, data_samples()[0], {}) for argv in cases]


def _cli_data():
    cases = [*_data_attacks(), *_scale_extremes()]
    return [(_BASE, data, {}) for data in cases]


def _cli_mutations():
    samples = [p.data for p in data_samples()[:1]]
    return mutations(samples).map(lambda hd: (_BASE, Payload(hd[1], ".npy", f"mutated ({hd[0]})"), {}))


def _out_targets():
    good = data_samples()[0]
    out = ("--out", "{out}")
    cases = [((*_BASE, "--out", "{dir}"), {}), ((*_BASE, "--out", "{dir}", "--force"), {}),
             ((*_BASE, "--out", "{dangling}"), {}), ((*_BASE, "--out", "{long}"), {}),
             ((*_BASE, *out), {"out exists": True}),
             ((*_BASE, *out, "--force"), {"out exists": True, "file size limit": 2000}),
             ((*_BASE, *out), {"file size limit": 2000}),
             ((*_BASE, "--out", "/proc/version", "--force"), {}), ((*_BASE, "--out", "{nodir}"), {}),
             (("sketch", "{data}", "--m", "1000000", *out), {}), (("sketch", "{data}", "--m", "10000000"), {}),
             (("sketch", "{data}", "--m", "3", "--chunk-rows", "1", "--split-every", "2", *out), {})]
    return [(argv, good, options) for argv, options in cases]


def cli_entries(Entry, Family) -> list:
    return [Entry("explorer.cli:main", "CLI", _cli_call, _cli_accept, setup=_cli_setup,
                  covers=("explorer.cli_errors:printable",),
                  valid=lambda: [((*_BASE, "--out", "{out}"), data_samples()[0], {})],
                  families={"argv": Family(strategy=_argv_cases, examples=60),
                            "argparse errors": Family(values=_argparse_errors),
                            "data files": Family(values=_cli_data),
                            "mutated data": Family(strategy=_cli_mutations, examples=20),
                            "out targets": Family(values=_out_targets)})]


# -- the dashboard's links -------------------------------------------------------------------

def _page_names() -> list[str]:
    return sorted({name for cls in PAGES for name in cls.param if name not in Page.param and name != "name"})


_KEYS = (*URL_NAMES, "page", "t", "speed", "predict")
_VALUES = ("", "true", "false", "null", "{", "[", "[1,2]", '"x"', "NaN", "Infinity", "-Infinity", "1e309", "-1",
           "0", "1", "7", "50", "1000", "0.5", "1e-300", "1e300", "9" * 4301, "<script>alert(1)</script>", "%00",
           "sketching", "pca", "newton", "adagrad", "fm", "mnist", "your upload", '["RFD-SON"]', "1" + "0" * 400)


def _queries():
    keys = st.sampled_from([*_KEYS, *_page_names(), "nope"])
    values = st.one_of(st.sampled_from(_VALUES), st.text(max_size=12), st.integers(-10 ** 6, 10 ** 6).map(str))
    return st.tuples(st.sampled_from([cls.key for cls in PAGES]),
                     st.dictionaries(keys, values, min_size=1, max_size=4)).map(
        lambda case: "?" + urlencode({"page": case[0], **case[1]}))


def _digit_links():
    """Every key with 4301 digits (past Python's int() limit), 1e400 and -1e400 as digits
    (past a float), 1e400 in exponent form; true where a page's number belongs; t past
    the stream's end."""
    numbers = ("9" * 4301, "1" + "0" * 400, "-" + "9" * 400, "1e400")
    return ["?" + urlencode({"page": page, key: number}) for key in (*_KEYS, "nope") for number in numbers
            for page in ("newton", "sketching")] + \
        ["?" + urlencode({"page": cls.key, key: "true"}) for cls in PAGES for key in ("seed", "m", "k", "rank", "adagrad_eta")] + \
        [f"?page={cls.key}&n=200&t=5000" for cls in PAGES]


def _links_call(subject, query, scratch):
    app = Dashboard()
    app.sync_url(Location(search=query))
    return app


def _parsed(text: str):
    """A query value as the dashboard may read it: JSON, else a number (``+0.0``), else text."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return float(text) if text.strip() and not text.strip().isalpha() else text
    except ValueError:
        return text


def _same(a, b) -> bool:
    a, b = _parsed(a), _parsed(b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) and not isinstance(b, bool):
        return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))
    return a == b and type(a) is type(b)


_EXPLAINED_BY = {("dataset", "your upload"): "no uploaded file"}
"""Values whose message need not name the key (the settings explain them in their own words)."""


def _links_accept(subject, query, app, scratch):
    shown = app.url_query()
    for key, raw in parse_qsl(query[1:], keep_blank_values=True):
        if key in shown and not _same(raw, shown[key]):
            named = re.compile(rf"(?<![\w.]){re.escape(key)}(?![\w])")
            words = _EXPLAINED_BY.get((key, raw))
            assert any(named.search(message) or (words and words in message) for message in app.messages), (
                f"{key}={raw[:30]!r} was not applied (now {shown[key][:30]}) and no message says so: {app.messages}")
    for target in (app.settings, app.transport, app.active):
        for name in target.param:
            default, value = target.param[name].default, getattr(target, name)
            if isinstance(default, (int, float)) and not isinstance(default, bool) and default is not None:
                assert not isinstance(value, bool), f"{type(target).__name__}.{name} holds the bool {value}"


def link_entries(Entry, Family) -> list:
    return [Entry("explorer.dashboard.app:Dashboard.sync_url", "dashboard links", _links_call, _links_accept,
                  refuses=False, valid=lambda: ["?m=7&seed=3", *(f"?page={cls.key}" for cls in PAGES)],
                  covers=("explorer.dashboard.app:keep_json", "explorer.dashboard.settings:apply_query",
                          "explorer.dashboard.app:clean_first", "explorer.dashboard.settings:clean_query"),
                  families={"queries": Family(strategy=_queries, examples=60),
                            "digits and bools": Family(values=_digit_links)})]


# -- learners at scale extremes ----------------------------------------------------------------

_EXTRA = {"SON auto, C = 100": lambda: SketchedOnlineNewton(D, C=100.0),
          "SON defaults": lambda: SketchedOnlineNewton(D),
          **{f"SON {kind}": (lambda kind=kind: SketchedOnlineNewton(D, sketch=kind, m=3, C=10.0))
             for kind in ("fd", "rp", "oja")}}
_LEARNER_NAMES = ("SketchedOnlineNewton", "AdaGrad", "OGD", "Adam", "SketchedFTRL", "FTRLFM", "OGDFM", "OCGFM",
                  "AdaLR", "RadaGrad")


def _make(name: str):
    return _EXTRA[name]() if name in _EXTRA else FEEDS[name][0]()


def _round(obj, name: str, x, y):
    """One round; SON's prediction must lie in its slab."""
    if isinstance(obj, SketchedOnlineNewton):
        prediction = obj.step(x, y).prediction
        assert abs(prediction) <= obj.C * (1 + 1e-12), f"prediction {prediction:.3g} outside [-C, C], C = {obj.C:g}"
        return
    ROUNDS.get(name, ROUNDS["SketchedOnlineNewton"])(obj, x, y)


def _first_rows():
    return [("first row", name, k) for name in (*_LEARNER_NAMES, *_EXTRA) for k in (-320, -300, -150, -16, 16, 150, 300)]


def _learner_setup(value, scratch):
    return _make(value[1]) if value[0] == "first row" else None


def _learner_observe(obj, scratch):
    return None if obj is None else fingerprint(obj)


def _learner_call(obj, value, scratch):
    if value[0] == "first row":
        _, name, k = value
        with np.errstate(over="ignore", under="ignore"):
            x = rows(np.random.default_rng(1), 1)[0] * 10.0 ** k
        _round(obj, name, x, 1.0)
        return obj
    _, name, parameter, big = value
    cls = type(_make(name))
    arguments = constructor_arguments(_make(name))
    obj = cls(**{**arguments, parameter: big})
    _round(obj, name, rows(np.random.default_rng(2), 1)[0], 1.0)
    return obj


def _learner_accept(obj, value, result, scratch):
    name = value[1]
    assert nonfinite_entries(result.state_dict()) == [], "non-finite state"
    if value[0] != "first row":
        keeps_working_as(result, name if name in FEEDS else "SketchedOnlineNewton")
        return
    rng = np.random.default_rng(4)
    accepted = 0
    for x, y in zip(rows(rng, 30), rng.choice([-1.0, 1.0], 30)):
        before = fingerprint(result)
        try:
            _round(result, name, x, y)
            accepted += 1
        except ValueError:
            assert fingerprint(result) == before, "a refused ordinary round changed the state"
    assert accepted >= 20, f"only {accepted} of 30 ordinary rows accepted after the first row (learner dead)"
    assert nonfinite_entries(result.state_dict()) == [], "non-finite state"


def _big_arguments():
    cases = []
    for name in _LEARNER_NAMES:
        for parameter, value in constructor_arguments(_make(name)).items():
            if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and parameter not in ("seed", "d"):
                cases += [("constructor", name, parameter, big) for big in (10 ** 9, 10 ** 12)]
    return cases


def learner_entries(Entry, Family) -> list:
    return [Entry("learners (first rows at scale extremes, size arguments)", "learners", _learner_call, _learner_accept,
                  setup=_learner_setup, observe=_learner_observe,
                  valid=lambda: [("first row", "AdaGrad", 0)],
                  families={"first row scaled": Family(values=_first_rows),
                            "integer arguments of 10^9 and 10^12": Family(values=_big_arguments)})]
