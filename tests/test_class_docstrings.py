"""Every algorithm's class docstring states its rule beside its paper: for each learner and
sketch of the zoo (tests/stateful_zoo.py), the docstring names the paper with its year
(an author-year citation), shows one example (a doctest, which the doctest run executes)
and stays short enough to read in one screen (the rule, not its history)."""

from __future__ import annotations

import inspect
import re

import pytest

from stateful_zoo import FEEDS

CITATION = re.compile(r"\b[A-Z][a-z]+\b[^\n]{0,40}\b(?:19|20)\d\d\b")
"""An author followed by a year: "Liberty 2013", "Luo et al. 2017", "(NIPS 2016)"."""
MAX_LINES = 60


def docstring(name: str) -> tuple[str, str]:
    cls = type(FEEDS[name][0]())
    return f"{cls.__module__}.{cls.__qualname__}", inspect.getdoc(cls) or ""


def faults(doc: str) -> list[str]:
    found = []
    if ">>>" not in doc:
        found.append("no example")
    if not CITATION.search(doc):
        found.append("no author-year reference")
    if len(doc.splitlines()) > MAX_LINES:
        found.append(f"{len(doc.splitlines())} lines > {MAX_LINES}")
    if re.search(r"\bissue \d+", doc, re.IGNORECASE):
        found.append("cites an issue")
    return found


@pytest.mark.parametrize("name", sorted(FEEDS))
def test_a_class_docstring_states_its_rule_with_example_and_reference(name):
    where, doc = docstring(name)
    assert faults(doc) == [], where


@pytest.mark.parametrize("doc, expected", [
    ("Frequent Directions (Liberty 2013).\n\n>>> 1\n1", []),
    ("Luo et al. (NIPS 2016)\n>>> 1", []),
    ("A rule with no paper.\n>>> 1", ["no author-year reference"]),
    ("Frequent Directions (Liberty 2013).", ["no example"]),
    ("Liberty 2013\n>>> 1\n" + "line\n" * 60, ["62 lines > 60"]),
    ("Liberty 2013 (fixed in issue 12)\n>>> 1", ["cites an issue"]),
])
def test_the_checker_faults_what_it_should(doc, expected):
    assert faults(doc) == expected
