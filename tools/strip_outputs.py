"""Strip notebook outputs, keeping only the checked text outputs that nbval compares.

The lessons and reproductions are committed with the outputs of their
``# NBVAL_CHECK_OUTPUT`` cells (seeded, rounded numbers that ``pytest --nbval-lax``
compares) and nothing else: plots and widgets change with library versions and carry
random ids (UX.md, "Recipe: nbval"). After executing a notebook with

    jupyter nbconvert --to notebook --execute --inplace lessons/NN_name.ipynb

run

    python tools/strip_outputs.py lessons/NN_name.ipynb [more.ipynb ...]

For a checked cell (its first line is ``# NBVAL_CHECK_OUTPUT``, or it has the tag
``nbval-check-output``) this keeps its stdout and the ``text/plain`` part of its result,
merging consecutive stdout chunks; stderr, HTML, plot JSON and widget views are dropped.
Every other cell loses all outputs and its execution count; a checked cell keeps the count
a top-to-bottom run gives it (nbval refuses outputs without one). Per-cell execution
timings and the saved widget state are removed, so re-running changes nothing in git
unless a checked number changed. ``--check`` changes no file and exits with status 1 if any
notebook would change (for CI).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from explorer.atomic import write_atomic  # noqa: E402

MARKER = "# NBVAL_CHECK_OUTPUT"
TAG = "nbval-check-output"


def is_checked(cell) -> bool:
    """True for a code cell whose outputs nbval compares (first-line marker or tag)."""
    if cell.cell_type != "code":
        return False
    lines = cell.source.lstrip().splitlines()
    first = lines[0].strip() if lines else ""
    return first.startswith(MARKER) or TAG in cell.get("metadata", {}).get("tags", [])


def kept_outputs(outputs) -> list:
    """The text a checked cell keeps: stdout (merged) and text/plain results."""
    kept = []
    for output in outputs:
        if output.output_type == "stream" and output.name == "stdout":
            if kept and kept[-1].output_type == "stream" and kept[-1].name == "stdout":
                kept[-1].text += output.text
            else:
                kept.append(nbformat.v4.new_output("stream", name="stdout", text=output.text))
        elif output.output_type == "execute_result" and "text/plain" in output.get("data", {}):
            kept.append(nbformat.v4.new_output("execute_result",
                                               data={"text/plain": output.data["text/plain"]},
                                               execution_count=None))
    return kept


def strip(nb) -> None:
    """Strip ``nb`` in place.

    nbval refuses a cell that has outputs but no execution count ("Unrun reference cell
    has outputs"), so a checked cell with outputs gets the count a top-to-bottom run gives
    it: its position among the code cells. Every other cell gets none.
    """
    nb.metadata.pop("widgets", None)
    position = 0
    for cell in nb.cells:
        cell.get("metadata", {}).pop("execution", None)
        if cell.cell_type != "code":
            continue
        position += 1
        cell.outputs = kept_outputs(cell.outputs) if is_checked(cell) else []
        cell.execution_count = position if cell.outputs else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 if a notebook would change")
    args = parser.parse_args(argv)
    changed = []
    for path in args.notebooks:
        before = path.read_text(encoding="utf-8")
        nb = nbformat.reads(before, as_version=4)
        strip(nb)
        after = nbformat.writes(nb) + "\n"
        if after != before:
            changed.append(path)
            if not args.check:
                write_atomic(path, after.encode("utf-8"))  # a stopped run leaves no half notebook
    for path in changed:
        print(f"{'would strip' if args.check else 'stripped'} {path}")
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
