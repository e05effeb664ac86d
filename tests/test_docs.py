"""The repository explains itself: citations point into docs/, and what they cite exists.

- No file may send the reader to notes that live outside the repository (the old
  algorithm and data-set notes, or a folder of paper texts): ``docs/`` replaces them.
- Every "docs/algorithms.md section N" (or "sections 1, 2 and 6", "sections 1-3", "§ N")
  names a numbered heading of docs/algorithms.md.
- Every link to a heading of a docs page (``algorithms.md#...``) resolves.

This file is skipped by the first check, since it has to spell out what it looks for.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SCANNED = ("explorer", "tests", "lessons", "notebooks", "benchmarks", "docs", "README.md")
SUFFIXES = {".py", ".ipynb", ".md", ".txt", ".toml", ".yml", ".yaml", ".cfg", ".ini"}
SKIPPED_DIRS = {"__pycache__", ".ipynb_checkpoints", "results"}

OUTSIDE = re.compile(r"ALGORITHMS\.md|DATASETS\.md|\bpapers/")
NUMBER = r"\d+(?:\.\d+)*"
CITATION = re.compile(
    r"docs/algorithms\.md`?,?\s*(?:§\s*|sections?\s+)"
    rf"({NUMBER}(?:\s*(?:,\s*and|,|and|-|–)\s*{NUMBER})*)")
LINK = re.compile(r"\b((?:docs/)?[a-z_]+\.md)#([\w-]+)")


def _files() -> list[Path]:
    found = []
    for name in SCANNED:
        path = ROOT / name
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found += [p for p in sorted(path.rglob("*"))
                      if p.is_file() and p.suffix in SUFFIXES
                      and not SKIPPED_DIRS.intersection(p.relative_to(ROOT).parts)]
    return found


def _prose(path: Path) -> str:
    """The text a reader sees: a notebook's cell sources joined by newlines, else the file."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".ipynb":
        return text
    cells = json.loads(text)["cells"]
    return "\n".join("".join(cell["source"]) for cell in cells)


def _headings(path: Path) -> list[str]:
    """Markdown headings (## and deeper) outside code fences."""
    headings, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and re.match(r"#{2,6}\s", line):
            headings.append(line.lstrip("#").strip())
    return headings


def _section_numbers() -> set[str]:
    numbers = set()
    for heading in _headings(DOCS / "algorithms.md"):
        match = re.match(rf"({NUMBER})\.?\s", heading)
        if match:
            numbers.add(match.group(1))
    return numbers


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def _cited(numbers: str) -> list[str]:
    """'1, 2 and 6' -> ['1', '2', '6']; '1-3' -> ['1', '2', '3']."""
    cited = []
    for part in re.split(r"\s*(?:,\s*and|,|and)\s*", numbers):
        ends = re.split(r"\s*[-–]\s*", part)
        if len(ends) == 2 and ends[0].isdigit() and ends[1].isdigit():
            cited += [str(i) for i in range(int(ends[0]), int(ends[1]) + 1)]
        else:
            cited += ends
    return cited


def _line(text: str, position: int) -> int:
    return text.count("\n", 0, position) + 1


def test_the_docs_pages_exist():
    for name in ("README.md", "algorithms.md", "datasets.md", "papers.md"):
        assert (DOCS / name).is_file(), f"docs/{name} is missing"
    assert {str(n) for n in range(7)} <= _section_numbers(), \
        "docs/algorithms.md must have sections 0 (notation) to 6, numbered '## N. ...'"


def test_no_file_points_outside_the_repository():
    offenders = []
    for path in _files():
        if path == Path(__file__).resolve():
            continue
        text = path.read_text(encoding="utf-8")
        for match in OUTSIDE.finditer(text):
            offenders.append(f"{path.relative_to(ROOT)}:{_line(text, match.start())}: "
                             f"{match.group(0)!r}")
    assert not offenders, ("these cite notes that are not in the repository; cite docs/ "
                           "instead (docs/README.md lists the pages):\n" + "\n".join(offenders))


def test_every_cited_section_exists():
    sections = _section_numbers()
    missing = []
    for path in _files():
        text = _prose(path)
        for match in CITATION.finditer(text):
            for number in _cited(match.group(1)):
                if number not in sections:
                    missing.append(f"{path.relative_to(ROOT)}: {match.group(0)!r} "
                                   f"(no section {number})")
    assert not missing, ("docs/algorithms.md has no heading for these citations "
                         f"(it has {sorted(sections, key=lambda s: [int(x) for x in s.split('.')])}):\n"
                         + "\n".join(missing))


def test_links_to_docs_headings_resolve():
    anchors = {page.name: {_slug(h) for h in _headings(page)} for page in DOCS.glob("*.md")}
    broken = []
    for path in _files():
        text = _prose(path)
        for match in LINK.finditer(text):
            page, anchor = Path(match.group(1)).name, match.group(2)
            if page in anchors and anchor not in anchors[page]:
                broken.append(f"{path.relative_to(ROOT)}: {match.group(0)}")
    assert not broken, "links to headings that do not exist:\n" + "\n".join(broken)


@pytest.mark.parametrize("text, expected", [
    ("docs/algorithms.md section 5).", ["5"]),
    ("`docs/algorithms.md`, sections 1-3; the", ["1", "2", "3"]),
    ("docs/algorithms.md sections 1, 2 and 6", ["1", "2", "6"]),
    ("docs/algorithms.md section 1, step 3", ["1"]),
    ("docs/algorithms.md § 4.5", ["4.5"]),
])
def test_citations_are_parsed(text, expected):
    assert _cited(CITATION.search(text).group(1)) == expected
