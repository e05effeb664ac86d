"""The fuzz registry: every public function or method that reads untrusted input, with how to
feed it hostile input and what it must do with it. tests/test_fuzz_entry_points.py runs every
entry's every attack family in a child process (tests/fuzz_runner.py) and fails on anything
but a clean refusal or a sound acceptance; its completeness test fails when a public
function whose parameters suggest untrusted input is neither covered here
(``Entry.name`` or ``Entry.covers``) nor exempted in :data:`EXEMPT` with a reason.

An :class:`Entry` has

- ``name``: the ``module:Qualified.name`` it fuzzes; ``category``: its line in the report;
- ``call(subject, value, scratch)``: the adapter running one input (``scratch``: a fresh
  folder); ``setup(value, scratch)`` builds the subject first (an object, files);
- ``observe(subject, scratch)``: what a refusal must leave unchanged (default: every file
  in ``scratch``, :func:`fuzz_checks.files_in`);
- ``accept(subject, value, result, scratch)``: asserts the documented guarantees;
- ``families``: attack family name -> :class:`Family` (a list of inputs, or a hypothesis
  strategy and its number of examples); ``valid``: the inputs ``warm_up`` runs first;
- ``refuses``: False when even a ``ValueError`` is a failure (a link must never raise).

State dicts are fuzzed by tests/test_fuzz_stateful.py for every ``@stateful`` class (its
``from_state_dict``/``load_state_dict``): this registry reads them through files and bytes only.
Categories: byte format, state files, data files, CLI, dashboard links, learners, torch optimizer.
"""

from __future__ import annotations

import functools
import importlib.util
from dataclasses import dataclass, field
from typing import Any, Callable

from fuzz_anatomy import anatomy_entries
from fuzz_checks import files_in
from fuzz_entries import data_entries, format_entries
from fuzz_cli_links import cli_entries, learner_entries, link_entries
from fuzz_torch import torch_entries

__all__ = ["Entry", "Family", "ENTRIES", "EXEMPT", "COVERED_BY_STATEFUL_FUZZ", "covered_names"]


@dataclass(frozen=True)
class Family:
    """One attack family: ``values()`` (a list, each input once) or ``strategy()`` (hypothesis,
    ``examples`` inputs, derandomized)."""

    values: Callable[[], list] | None = None
    strategy: Callable[[], Any] | None = None
    examples: int = 40


def _no_setup(value, scratch):
    return None


def _files(subject, scratch):
    return files_in(scratch)


@dataclass(frozen=True)
class Entry:
    name: str
    category: str
    call: Callable
    accept: Callable
    families: dict
    valid: Callable[[], list]
    setup: Callable = _no_setup
    observe: Callable = _files
    refuses: bool = True
    covers: tuple = field(default=())

    def warm_up(self, scratch) -> None:
        """Run the valid inputs (each must be accepted soundly): imports and caches load
        here, outside the measured calls."""
        for value in self.valid():
            subject = self.setup(value, scratch)
            self.accept(subject, value, self.call(subject, value, scratch), scratch)


def _build() -> dict[str, Entry]:
    entries = [*format_entries(Entry, Family), *data_entries(Entry, Family), *cli_entries(Entry, Family),
               *link_entries(Entry, Family), *learner_entries(Entry, Family),
               *anatomy_entries(Entry, Family)]
    if importlib.util.find_spec("torch") is not None:
        entries += torch_entries(Entry, Family)
    return {entry.name: entry for entry in entries}


ENTRIES = _build()

# Public functions whose parameters look like untrusted input but that are not readers of it,
# each with the reason. Keys are ``module:Qualified.name``.
EXEMPT = {
    "explorer.dashboard.opened:open_next": "its name comes from the panel's Select of the page's own "
                                           "algorithms, not from a URL or a file; an unknown one is a "
                                           "ValueError naming those offered (tests/test_dashboard_opened.py)",
    "explorer.dashboard.collector:SessionCollector.opened": "a counter: takes no argument (a session was opened)",
    "explorer.state:save_state": "a writer: writes the caller's own object",
    "explorer.dashboard.bundle:fetch": "reads only the tarball whose sha256 is pinned: any other bytes "
                                       "(or more than MAX_BYTES) are a BundleError, a ValueError, before "
                                       "they are opened, and nothing is written "
                                       "(tests/test_dashboard_bundle.py)",
    "explorer.atomic:write_atomic": "a writer: writes the caller's bytes atomically",
    "explorer.merging:pack_state": "a writer: to_bytes' packer of an object's own state",
    "explorer.state:check_plain": "a writer's check: save_state and to_bytes refuse an object's own unpicklable value",
    "explorer.state:check_kind": "a check inside from_state_dict (state dicts: the stateful fuzz)",
    "explorer.state:state_part": "slices a state dict inside from_state_dict (the stateful fuzz)",
    "explorer.state:nonfinite_entries": "inspects a state dict; raises nothing (the stateful fuzz uses it)",
    "explorer.dashboard.layout:plain_text": "renders the project's own messages as escaped text",
    "explorer.site_dashboard:source_wheel": "a build step (tools/build_site.py): packs the project's own "
                                            "constant module text (NH3_STAND_IN) into a wheel",
    "explorer.dashboard.cells:explanation": "renders the project's own explanation text",
    "explorer.glossary:used_in": "searches a page's text (its notes may quote an upload's label values) for "
                                 "the glossary's fixed patterns, none with a nested quantifier: nothing is "
                                 "parsed, kept or run",
    "explorer.glossary:escape_markdown": "escapes the glossary's own text for a lesson's Markdown",
    "explorer.dashboard.cells:help_text": "renders the project's own help lines, status line and stream shape (no user text)",
    "explorer.dashboard.cells:row": "a layout helper; its params are widget options the code passes",
    "explorer.dashboard.cells:switch": "a widget factory; its parameter and params are the code's own",
    "explorer.plots.charts:bar_chart": "draws the caller's numbers; text is the chart's own label",
    "explorer.experiments.fm.tasks:movielens_stream": "its data is the bundled MovieLens set, not user input",
    "explorer.fm.data:most_active": "its data is a bundled data set already parsed by the package",
    "explorer.fm._shrink:PartMemo.read": "reads a memo the learner itself wrote in memory",
    "explorer.race:Race.load_state_dict": "in-memory snapshots the race itself took (Back); never read from a file or link",
    "explorer.race:EventTimes.load_state_dict": "part of a race's own in-memory snapshot (Back): the event "
                                                "rounds the race booked; never read from a file or link",
    "explorer.experiments.adagrad:AdaGradRace.load_state_dict": "a race's own in-memory snapshot (Back)",
    "explorer.experiments.fm.race:FactorizationRace.load_state_dict": "a race's own in-memory snapshot (Back)",
    "explorer.experiments.newton:NewtonRace.load_state_dict": "a race's own in-memory snapshot (Back)",
    "explorer.experiments.pca:AdaptivePCARace.load_state_dict": "a race's own in-memory snapshot (Back)",
    "explorer.experiments.sketching:SketchComparison.from_state_dict": "a comparison's own in-memory snapshot (Back)",
    "explorer.experiments.sketching:SketchComparison.load_state_dict": "a comparison's own in-memory snapshot (Back)",
    "explorer.streams:load_stream": "reads only the bundled data sets, by a name from DATASETS; the dashboard's "
                                    "links reach it through Settings' bounds (the links entry)",
}

# Readers of a state dict part, reached only from the load_state_dict of a @stateful class
# (fuzzed by tests/test_fuzz_stateful.py) or of AdaFD (the torch entries).
_STATE_PARTS = ("explorer.adagrad.proximal:", "explorer.adagrad.proximal.", "explorer.adagrad.randomized:",
                "explorer.newton.curvature:",
                "explorer.pca._base:read_")


def COVERED_BY_STATEFUL_FUZZ(qualified: str) -> bool:  # noqa: N802 (a predicate the tests name as a rule)
    """True for a state-dict reader that tests/test_fuzz_stateful.py fuzzes: the
    ``from_state_dict``/``load_state_dict`` of a class registered with ``@stateful`` (or of
    one of its bases), and the ``read_state``-style helpers only they call."""
    from explorer.state import registered_kinds

    module, _, name = qualified.partition(":")
    if qualified.startswith(_STATE_PARTS) and ("read_state" in name or name.startswith("read_")):
        return True
    owner, _, method = name.rpartition(".")
    if method not in ("from_state_dict", "load_state_dict") or not owner:
        return False
    cls = getattr(importlib.import_module(module), owner, None)
    if cls is None:
        return False
    kinds = set(registered_kinds())
    return owner in kinds or any(sub.__name__ in kinds for sub in _subclasses(cls))


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


@functools.lru_cache(maxsize=1)
def covered_names() -> frozenset[str]:
    """Every ``module:Qualified.name`` an entry fuzzes or covers."""
    return frozenset(name for entry in ENTRIES.values() for name in (entry.name, *entry.covers))
