"""The kernel's side of a lesson slider step: what each move costs before any message leaves.

    python benchmarks/lesson_slider_kernel.py             # every lesson, every slider (~2-3 min)
    python benchmarks/lesson_slider_kernel.py --quick     # lesson 01, its first slider
    python benchmarks/lesson_slider_kernel.py --lessons 03 05 --json /tmp/k.json

No browser and no kernel: each lesson runs in a fresh interpreter (this virtualenv's), which
executes its code cells in order up to the cell that builds its sliders
(``widgets.interactive_output``), with every figure's ``show()`` replaced by serializing it
to JSON (what a kernel does before sending it) and ``display`` by nothing. It then waits
for numba's background compile (a student's kernel has long finished it by then), and moves
each control one notch from its initial value (right, or left at the end of its range; the
next option; a check box flipped) by setting the widget's value, as a key press does: ``interactive_output``'s observer runs the
lesson's callback. Timed in CPU seconds of the process:

- **new**: the moved setting was never seen (the lesson recomputes what depends on it);
- **back**: moving it back to a setting seen before (the lesson's kept runs: a redraw).

The aim (the issue "fast where students feel it"): every new setting under 0.2 s. The time
a student waits also includes the messages and Plotly's drawing in the browser:
``lesson_slider_latency.py`` measures that end to end.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import _common

CORRECTNESS_KEY = "all_lessons_ran"
QUICK_LESSONS = ("01",)
AIM_S = 0.2
TIMEOUT_S = 600

CHILD = r"""
import json, math, sys, time
path, quick = sys.argv[1], sys.argv[2] == "1"
import IPython.display
import ipywidgets as widgets
import nbformat
import plotly.graph_objects as go
import plotly.io as pio

go.Figure.show = lambda self, *args, **kwargs: pio.to_json(self)   # what a kernel sends
IPython.display.display = lambda *args, **kwargs: None
captured = []
original = widgets.interactive_output


def spy(f, controls):
    captured.append(controls)
    return original(f, controls)


widgets.interactive_output = spy
namespace = {"__name__": "__main__"}
for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
    if cell.cell_type != "code":
        continue
    lines = [line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    exec(compile("\n".join(lines), f"{path} cell {index}", "exec"), namespace)
    if captured:
        break
if not captured:
    raise SystemExit(f"{path}: no cell calls widgets.interactive_output")
from explorer import compiled
compiled.wait(120)


def notch(control):
    # the value one key press away (right, or left at the end of the range; the next option)
    if isinstance(control.value, bool):  # a check box or toggle: one click
        return ("value", not control.value)
    if hasattr(control, "options") and hasattr(control, "index"):  # a selection slider, buttons, a list
        index = control.index + 1 if control.index + 1 < len(control.options) else control.index - 1
        return ("index", index)
    if isinstance(control, widgets.FloatLogSlider):
        exponent = round(math.log(control.value, control.base) / control.step) * control.step
        up = exponent + control.step <= control.max + 1e-12
        return ("value", control.base ** (exponent + control.step if up else exponent - control.step))
    up = control.value + control.step <= control.max
    return ("value", control.value + control.step if up else control.value - control.step)


def timed(control, key, value):
    start = time.process_time()
    setattr(control, key, value)
    return time.process_time() - start


rows = []
for name, control in list(captured[0].items())[:1 if quick else None]:
    key, value = notch(control)
    before, shown_before = getattr(control, key), control.value
    new = timed(control, key, value)
    shown = control.value
    back = timed(control, key, before)
    rows.append({"slider": name, "from": shown_before, "to": shown, "new_s": new, "back_s": back,
                 "moved": shown != shown_before})
print(json.dumps(rows, default=float))
"""


def run(quick: bool = False, lessons: list[str] | None = None) -> dict:
    """Move every slider of every lesson one notch, in a fresh interpreter per lesson."""
    paths = _common.select_lessons(lessons or (QUICK_LESSONS if quick else None))
    result = {"aim_s": AIM_S, "load_average": os.getloadavg()[0], "lessons": []}
    for path in paths:
        print(f"lesson_slider_kernel: {path.name}", file=sys.stderr, flush=True)
        environment = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}
        done = subprocess.run([sys.executable, "-c", CHILD, str(path), "1" if quick else "0"],
                              capture_output=True, text=True, cwd=path.parent, env=environment,
                              timeout=TIMEOUT_S)
        if done.returncode != 0:
            result["lessons"].append({"lesson": path.name, "error": done.stderr.strip()[-2000:]})
            continue
        sliders = json.loads(done.stdout.strip().splitlines()[-1])
        result["lessons"].append({"lesson": path.name, "sliders": sliders,
                                  "worst_new_s": max(row["new_s"] for row in sliders)})
    ran = [r for r in result["lessons"] if "error" not in r]
    result["load_average_after"] = os.getloadavg()[0]
    result["over_aim"] = [r["lesson"] for r in ran if r["worst_new_s"] >= AIM_S]
    result[CORRECTNESS_KEY] = (len(ran) == len(paths) > 0
                               and all(row["moved"] for r in ran for row in r["sliders"]))
    return result


def format_results(result: dict) -> str:
    rows = []
    for lesson in result["lessons"]:
        for row in lesson.get("sliders", []):
            rows.append({"lesson": lesson["lesson"].split("_")[0], **row,
                         "verdict": "under aim" if row["new_s"] < result["aim_s"] else "OVER AIM"})
    columns = [("lesson", "lesson"), ("slider", "slider"), ("from", "from"), ("to", "to"),
               ("new_s", "new setting (CPU s)"), ("back_s", "seen setting (CPU s)"), ("verdict", "verdict")]
    title = (f"Lesson sliders, kernel side: one notch per slider (load average "
             f"{result['load_average']:.1f} before, {result['load_average_after']:.1f} after)")
    lines = [_common.table(rows, columns, title=title)]
    lines += [f"  {r['lesson']}: FAILED: {r['error']}" for r in result["lessons"] if "error" in r]
    over = result["over_aim"]
    lines.append(f"Verdict: every new setting under {result['aim_s']} s: "
                 + ("met" if not over and result[CORRECTNESS_KEY] else f"not met ({', '.join(over) or 'a lesson failed'})"))
    return "\n".join(lines)


def main(argv=None) -> int:
    """``script_main``'s options plus ``--lessons``."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--lessons", nargs="+", metavar="PREFIX",
                        help="lessons to time, by file-name prefix, e.g. 03 05 (default: all; --quick: 01)")
    own, rest = parser.parse_known_args(argv)
    try:
        _common.select_lessons(own.lessons)
    except ValueError as error:
        parser.error(str(error))

    def run_selected(quick: bool = False) -> dict:
        return run(quick=quick, lessons=own.lessons)

    return _common.script_main(rest, doc=__doc__, run=run_selected, format_results=format_results,
                               passed_key=CORRECTNESS_KEY)


if __name__ == "__main__":
    sys.exit(main())
