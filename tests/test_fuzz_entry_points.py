"""Fuzz every entry point that reads untrusted input (the registry, tests/fuzz_registry.py).

Every attack family of every registry entry runs in a child process (tests/fuzz_runner.py)
under a per-call time limit and an address-space guard. Each input must be refused cleanly
(a ``ValueError``, or for the CLI exit status 2 with one line on stderr, with every file and
object bit-identical) or accepted soundly (the entry's check of the documented guarantees:
a sketch read back satisfies FD's bounds, data has the declared rows, a link's values are
applied or explained, a learner's state stays finite ...). No other exception, no hang, and
at most :data:`PEAK_MB` MB of peak memory over the child's baseline for any input.

The completeness test walks the ``explorer`` package's syntax trees: a public function or
method whose parameters suggest untrusted input (``path``, ``file``, ``data``, ``query``,
``argv``, ``state``, ...) or whose name reads (``from_bytes``, ``load*``, ``open*``,
``read*``, ``parse*``) must be in the registry, be a state-dict reader the stateful fuzz
covers (tests/test_fuzz_stateful.py), or be exempted with a reason in ``EXEMPT``.

``FUZZ_REPORT=path.json`` adds the tally per category (inputs tried, refused cleanly,
accepted soundly, state changed on refusal, accepted unsoundly, other exceptions, hangs,
peak memory of the worst input) to that file under ``"entry points"``, and each family's
under ``"entry points, by family"``, keeping what the stateful fuzz wrote there.
``FUZZ_SCALE=k`` runs k times the hypothesis examples, at random (a longer campaign).
"""

from __future__ import annotations

import ast
import atexit
import importlib
import json
import os
import pathlib
import re
from collections import defaultdict

import pytest

from fuzz_registry import COVERED_BY_STATEFUL_FUZZ, ENTRIES, EXEMPT, covered_names
from fuzz_runner import OUTCOMES, SCALE, run_family

PEAK_MB = 200.0
PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "explorer"
CASES = [(name, family) for name, entry in ENTRIES.items() for family in entry.families]
RESULTS: dict[tuple[str, str], dict] = {}


def write_report(path: str) -> None:
    """Add the tally per category (and per family) to the JSON file at ``path``, keeping
    what else it holds (the stateful fuzz writes its own categories there)."""
    categories: dict[str, dict] = defaultdict(lambda: defaultdict(int))
    for (name, family), result in sorted(RESULTS.items()):
        tally = categories[ENTRIES[name].category]
        for key in ("tried", *OUTCOMES):
            tally[key] += result.get(key, 0)
        tally["errors running a family"] += "error" in result
        if result.get("peak MB over baseline", 0.0) >= tally.get("peak MB over baseline", 0.0):
            tally["peak MB over baseline"] = result.get("peak MB over baseline", 0.0)
            tally["worst input"] = f"{name} / {family}: {result.get('worst input', '')}"
    existing = {}
    if os.path.exists(path):
        with open(path) as f:
            existing = json.load(f)
    existing["entry points"] = {category: dict(tally) for category, tally in sorted(categories.items())}
    existing["entry points, by family"] = {f"{name} / {family}": result for (name, family), result in sorted(RESULTS.items())}
    with open(path, "w") as f:
        json.dump(existing, f, indent=1, sort_keys=True)


@pytest.fixture(scope="module", autouse=True)
def _report():
    yield
    path = os.environ.get("FUZZ_REPORT")
    if path and RESULTS:
        write_report(path)
        # tests/test_fuzz_stateful.py rewrites the file when its module ends: add ours again at exit
        atexit.register(write_report, path)


@pytest.mark.timeout(300 * SCALE)
@pytest.mark.parametrize("name, family", CASES, ids=[f"{n.split(':')[-1]}-{f}" for n, f in CASES])
def test_every_input_is_refused_cleanly_or_accepted_soundly(name, family):
    result = run_family(name, family)
    RESULTS[(name, family)] = result
    assert "error" not in result, result["error"]
    bad = {key: result.get(key, 0) for key in OUTCOMES[2:] if result.get(key, 0)}
    assert not bad, f"{name} / {family}: {bad} of {result.get('tried')} inputs:\n  " + "\n  ".join(result["failures"])
    assert result["peak MB over baseline"] < PEAK_MB, (
        f"{name} / {family}: {result['peak MB over baseline']} MB over baseline for {result['worst input']}")


# -- completeness ----------------------------------------------------------------------------

WORDS = {"path", "file", "source", "data", "payload", "text", "query", "url", "argv", "args", "params", "state",
         "blob", "raw", "upload", "contents", "content", "filename", "search", "location"}
FRAGMENTS = ("path", "file", "url", "query", "payload", "blob", "upload")
READER = re.compile(r"^(from_bytes|load|open|read|parse)")


def untrusted_input_readers(package: pathlib.Path = PACKAGE) -> list[str]:
    """Every public function or method in ``package`` (``module:Qualified.name``) whose
    parameters or name suggest it reads untrusted input."""
    found = []
    for path in sorted(package.rglob("*.py")):
        module = ".".join(path.relative_to(package.parent).with_suffix("").parts).removesuffix(".__init__")

        def visit(node, prefix: str) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.ClassDef) and not child.name.startswith("_"):
                    visit(child, f"{prefix}{child.name}.")
                elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and not child.name.startswith("_"):
                    a = child.args
                    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if x]
                    if READER.match(child.name) or any(
                            n in WORDS or any(f in n.lower() for f in FRAGMENTS) for n in names):
                        found.append(f"{module}:{prefix}{child.name}")

        visit(ast.parse(path.read_text(), filename=str(path)), "")
    return found


def test_every_reader_of_untrusted_input_is_fuzzed_or_exempted():
    missing = [name for name in untrusted_input_readers()
               if name not in covered_names() and name not in EXEMPT and not COVERED_BY_STATEFUL_FUZZ(name)]
    assert not missing, ("public functions that read untrusted input but are in no fuzz registry entry "
                         "(tests/fuzz_registry.py) and not exempted with a reason: " + ", ".join(missing))


def test_the_registry_names_only_what_exists():
    """An entry or exemption for a function that was renamed or removed is stale."""
    readers = set(untrusted_input_readers())
    stale = sorted(name for name in EXEMPT if name not in readers)
    assert not stale, f"exempted but no longer found: {stale}"
    for name in covered_names():
        if " " in name:
            continue  # a generic entry (the learners'), not one function
        module, _, qualified = name.partition(":")
        target = importlib.import_module(module)
        for part in qualified.split("."):
            target = getattr(target, part, None)
        assert target is not None, f"the registry names {name}, which does not exist"


def test_the_completeness_walk_finds_a_new_reader(tmp_path):
    """The walk finds the known readers, and would find a new one (public, by name or by a
    parameter) while skipping private functions and classes."""
    assert {"explorer.sketch:from_bytes", "explorer.state:load_state", "explorer.cli:main",
            "explorer.distributed:open_rows", "explorer.dashboard.upload:parse_upload"} <= set(untrusted_input_readers())
    package = tmp_path / "explorer"
    package.mkdir()
    (package / "new.py").write_text(
        "def read_blob(b): ...\n"
        "def summarize(numbers, *, source_path=None): ...\n"
        "def _private(path): ...\n"
        "class _Hidden:\n    def load(self, file): ...\n"
        "class Reader:\n    def from_bytes(cls, payload): ...\n    def mean(self, x): ...\n")
    assert untrusted_input_readers(package) == ["explorer.new:read_blob", "explorer.new:summarize",
                                                "explorer.new:Reader.from_bytes"]
