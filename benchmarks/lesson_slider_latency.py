"""The lessons in JupyterLab in a real browser: Run-All time and slider-step redraw latency.

    python benchmarks/lesson_slider_latency.py             # all lessons, 5 steps each (~5-10 min)
    python benchmarks/lesson_slider_latency.py --quick     # lesson 01, 2 steps (~1 min)
    python benchmarks/lesson_slider_latency.py --lessons 03 05 --steps 3 --json /tmp/l.json
    python benchmarks/lesson_slider_latency.py --every-slider   # every slider of the widget, not the first

What a student sees, timed in the browser. The lessons are copied into a temporary folder
(the files in ``lessons/`` are never opened, so never modified) and JupyterLab serves that
folder (``python -m jupyterlab``, its own process, a random token, a free localhost port,
settings and workspaces in the temporary folder). The kernel is this virtualenv's
``python3``, so ``explorer`` is the installed package. Debian's ``chromium`` is driven by
Playwright, headless. For every lesson:

- **open**: from loading the notebook's URL to its kernel being idle;
- **run all**: from clicking Run > Run All Cells to the kernel being idle with every code
  cell executed (Python's clock, polled every 0.2 s). A cell that raises stops the lesson;
- **slider step**: the first slider of the lesson's "play with it" widget is scrolled to the
  top and focused, then ArrowRight is pressed (ArrowLeft when there is more room on that
  side), ``--steps`` times (fewer if the slider has less room: every step a new setting). In the browser's clock, from the keydown event to the next
  animation frame after the last change of the widget's output area (a MutationObserver on
  the ``Output`` widget), where "last" means: the kernel is idle again and nothing in the
  output changed for 1 s. That is the time until the redrawn charts are on screen: the
  kernel's computing, the messages, and Plotly's drawing. The time to the output's first
  change is reported too (the old charts stay until new output arrives, since
  ``interactive_output`` clears with ``wait=True``). Every step must move the slider's
  value and change the output's text (chart titles and legends show the value), or the
  lesson is reported as failed. With ``--every-slider``, every slider of that widget in turn
  (one row each; toggle buttons and check boxes are not timed).

The lessons' sliders all use ``continuous_update=False``, so one key press is one redraw.
``--threads`` and ``--clock`` are accepted as by every benchmark but change nothing here:
the kernels set their own BLAS threads (``threadpool_limits(1)``) and the times are wall
times (what a student waits). Without chromium the benchmark reports itself skipped.
Timings depend on the load of the machine (the browser renders in software); the load
average is printed with them.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import _common
import requests

CORRECTNESS_KEY = "all_lessons_ran"
QUICK_LESSONS = ("01",)
STEPS, QUICK_STEPS = 5, 2
QUIET_MS = 1000  # the output counts as settled after this long without a change
SERVER_START_TIMEOUT = 120  # s
OPEN_TIMEOUT = 180  # s, page load to an idle kernel
RUN_ALL_TIMEOUT = 1200  # s, for one notebook
STEP_TIMEOUT = 300  # s, for one slider step
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
# The notebook panel JupyterLab shows (``window.jupyterapp``: --LabApp.expose_app_in_browser).
NOTEBOOK_JS = "window.jupyterapp.shell.currentWidget"
KERNEL_IDLE_JS = f"""() => {{
  const app = window.jupyterapp, nb = app && {NOTEBOOK_JS};
  const kernel = nb && nb.sessionContext && nb.sessionContext.session && nb.sessionContext.session.kernel;
  return !!(nb && nb.content && kernel && kernel.status === 'idle');
}}"""
# Run All is over when the kernel is idle, no cell is queued or running, and every non-empty
# code cell has an execution count (or one of them holds an error: JupyterLab stops there).
RUN_ALL_STATE_JS = f"""() => {{
  const nb = {NOTEBOOK_JS};
  const kernel = nb.sessionContext.session && nb.sessionContext.session.kernel;
  const cells = nb.content.widgets.filter(c => c.model.type === 'code' && c.model.sharedModel.getSource().trim());
  const errors = [];
  for (const c of cells)
    for (const o of c.model.outputs.toJSON())
      if (o.output_type === 'error')
        errors.push({{cell: nb.content.widgets.indexOf(c), ename: o.ename, evalue: o.evalue}});
  const running = cells.some(c => c.model.executionState === 'running');
  const done = cells.filter(c => c.model.executionCount !== null).length;
  return {{idle: !!kernel && kernel.status === 'idle' && !running, done, total: cells.length, errors}};
}}"""
# Watch the Output widget of the first slider's cell; remember the slider's state.
WATCH_JS = """(handle) => {
  const cell = handle.closest('.jp-Cell');
  const out = cell && cell.querySelector('.widget-output');
  if (!out) throw new Error('no ipywidgets Output next to the first slider');
  const state = {t0: null, first: null, last: null, mutations: 0, out, text: out.textContent};
  handle.addEventListener('keydown', () => { if (state.t0 === null) state.t0 = performance.now(); },
                          {capture: true, once: true});
  state.observer = new MutationObserver(() => {
    if (state.t0 === null) return;  // late changes from the previous step
    state.mutations += 1;
    requestAnimationFrame(() => {
      const now = performance.now();
      if (state.first === null) state.first = now;
      state.last = Math.max(state.last || 0, now);
    });
  });
  state.observer.observe(out, {childList: true, subtree: true, attributes: true, characterData: true});
  window.__sliderStep = state;
}"""
SETTLED_JS = f"""(quietMs) => {{
  const s = window.__sliderStep, nb = {NOTEBOOK_JS};
  const kernel = nb.sessionContext.session && nb.sessionContext.session.kernel;
  return s.t0 !== null && s.last !== null && !!kernel && kernel.status === 'idle'
         && performance.now() - s.last >= quietMs;
}}"""
STEP_RESULT_JS = """() => {
  const s = window.__sliderStep;
  s.observer.disconnect();
  return {first_ms: s.first - s.t0, settled_ms: s.last - s.t0, mutations: s.mutations,
          text_changed: s.out.textContent !== s.text};
}"""
SLIDER_JS = """(handle) => {
  const slider = handle.closest('.widget-slider');
  const label = slider && slider.querySelector('.widget-label');
  const readout = slider && slider.querySelector('.widget-readout');  // as shown (log sliders: the value)
  return {name: label ? label.textContent.trim() : '', now: parseFloat(handle.getAttribute('aria-valuenow')),
          min: parseFloat(handle.getAttribute('aria-valuemin')), max: parseFloat(handle.getAttribute('aria-valuemax')),
          text: readout ? readout.textContent.trim() : handle.getAttribute('aria-valuetext')};
}"""
OUTPUT_HAS_PLOT_JS = """(handle) => {
  const out = handle.closest('.jp-Cell').querySelector('.widget-output');
  return !!out && !!out.querySelector('.js-plotly-plot .main-svg');
}"""


def run(quick: bool = False, lessons: list[str] | None = None, steps: int | None = None,
        every_slider: bool = False) -> dict:
    """Open every lesson in JupyterLab, run all cells, step its first slider (or each slider
    of the first slider's widget); see the docstring."""
    chromium = shutil.which("chromium")
    if chromium is None:
        return {"skipped": "Debian chromium is not installed", CORRECTNESS_KEY: True}
    from playwright.sync_api import sync_playwright

    steps = steps or (QUICK_STEPS if quick else STEPS)
    paths = _common.select_lessons(lessons or (QUICK_LESSONS if quick else None))
    result = {"steps": steps, "quiet_ms": QUIET_MS, "load_average": os.getloadavg()[0], "lessons": [],
              "every_slider": every_slider}
    with tempfile.TemporaryDirectory(prefix="lesson-slider-latency-") as tmp, _sigterm_as_exit():
        root = Path(tmp) / "lessons"
        root.mkdir()
        for path in paths:
            shutil.copy2(path, root / path.name)
        lab = _JupyterLab(root, Path(tmp) / "jupyter")
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
                try:
                    for path in paths:
                        print(f"lesson_slider_latency: {path.name}", file=sys.stderr, flush=True)
                        result["lessons"].extend(_lesson(browser, lab, path.name, steps, every_slider))
                        lab.shutdown_kernels()
                finally:
                    browser.close()
        finally:
            lab.stop()
    result["load_average_after"] = os.getloadavg()[0]
    result[CORRECTNESS_KEY] = bool(result["lessons"]) and all("error" not in r for r in result["lessons"])
    return result


def _lesson(browser, lab: "_JupyterLab", name: str, steps: int, every_slider: bool = False) -> list[dict]:
    """One lesson in a fresh browser context: its row, then with ``every_slider`` one row per
    further slider of the same widget; errors are reported in the row, not raised."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    row = {"lesson": name}
    rows = [row]
    context = browser.new_context(viewport={"width": 1500, "height": 1100})
    page = context.new_page()
    page.set_default_timeout(OPEN_TIMEOUT * 1000)
    try:
        t = time.monotonic()
        page.goto(lab.url(f"lab/tree/{name}", reset=True))
        page.wait_for_function(KERNEL_IDLE_JS, polling=200)
        row["open_s"] = time.monotonic() - t
        row["run_all_s"], row["cells"] = _run_all(page)
        handle = page.locator(".widget-slider .noUi-handle").first
        try:
            handle.wait_for(state="attached", timeout=60_000)
        except PlaywrightTimeout:
            raise RuntimeError("no ipywidgets slider was rendered within 60 s of Run All's end") from None
        handle.evaluate("h => h.closest('.jp-Cell').scrollIntoView({block: 'start'})")
        page.wait_for_function(OUTPUT_HAS_PLOT_JS, arg=handle.element_handle(), polling=200)
        _step_slider(page, handle, steps, row)
        others = handle.locator("xpath=ancestor::div[contains(@class, 'jp-Cell')]").locator(".widget-slider .noUi-handle")
        for i in range(1, others.count() if every_slider else 1):
            row = {"lesson": name}
            rows.append(row)
            _step_slider(page, others.nth(i), steps, row)
    except Exception as error:  # noqa: BLE001  (one broken lesson must not stop the others)
        row["error"] = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
    finally:
        context.close()
    return rows


def _run_all(page) -> tuple[float, int]:
    """Click Run > Run All Cells; seconds until every code cell has run, and their number."""
    page.get_by_role("menuitem", name="Run", exact=True).click()
    start = time.monotonic()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    # Run All queues every cell at once, so the first poll already sees them running; the
    # lessons keep some stored execution counts, so "all counted" alone proves nothing before.
    seen_running = False
    while True:
        state = page.evaluate(RUN_ALL_STATE_JS)
        elapsed = time.monotonic() - start
        seen_running = seen_running or not state["idle"]
        if state["errors"]:
            first = state["errors"][0]
            raise RuntimeError(f"cell {first['cell']} raised {first['ename']}: {first['evalue']}")
        if seen_running and state["idle"] and state["done"] == state["total"]:
            return elapsed, state["total"]
        if not seen_running and elapsed > 30:
            raise RuntimeError("Run > Run All Cells started no cell within 30 s")
        if elapsed > RUN_ALL_TIMEOUT:
            raise TimeoutError(f"Run All did not finish in {RUN_ALL_TIMEOUT} s "
                               f"({state['done']} of {state['total']} code cells ran)")
        page.wait_for_timeout(200)


def _step_slider(page, handle, steps: int, row: dict) -> None:
    """Press an arrow key on the slider ``steps`` times; each redraw's latency into ``row``."""
    slider = handle.evaluate(SLIDER_JS)
    right, left = slider["max"] - slider["now"], slider["now"] - slider["min"]
    key = "ArrowRight" if right >= left else "ArrowLeft"
    row.update(slider=slider["name"], key=key, values=[slider["text"]], first_ms=[], settled_ms=[])
    for _ in range(steps):
        state = handle.evaluate(SLIDER_JS)
        before = state["now"]
        if before >= state["max"] if key == "ArrowRight" else before <= state["min"]:
            break  # the end of the range: every step a setting not seen yet, so fewer steps here
        handle.evaluate(WATCH_JS)
        handle.focus()
        page.keyboard.press(key)
        page.wait_for_function(SETTLED_JS, arg=QUIET_MS, polling=100, timeout=STEP_TIMEOUT * 1000)
        step = page.evaluate(STEP_RESULT_JS)
        after = handle.evaluate(SLIDER_JS)
        if after["now"] == before:
            raise RuntimeError(f"{key} did not move slider {slider['name']!r} from {after['text']}")
        if not step["text_changed"]:  # titles and legends name the slider's value
            raise RuntimeError(f"the output's text did not change when {slider['name']!r} moved to {after['text']}")
        row["values"].append(after["text"])
        row["first_ms"].append(step["first_ms"])
        row["settled_ms"].append(step["settled_ms"])
    row["redraw_s"] = _summary([ms / 1000 for ms in row["settled_ms"]])
    row["first_change_s"] = _summary([ms / 1000 for ms in row["first_ms"]])


def _summary(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


class _JupyterLab:
    """``python -m jupyterlab`` on ``root`` in its own process group, on a free localhost port."""

    def __init__(self, root: Path, home: Path):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.token = secrets.token_hex(16)
        self.base = f"http://127.0.0.1:{self.port}/"
        settings = home / "settings"
        # no "official Jupyter news?" toast over the charts
        notification = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
        notification.parent.mkdir(parents=True)
        notification.write_text('{"fetchNews": "false"}')
        env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(settings),
                   JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
                   JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_RUNTIME_DIR=str(home / "runtime"),
                   OPENBLAS_NUM_THREADS=os.environ.get("OPENBLAS_NUM_THREADS", "1"))
        command = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--ServerApp.token={self.token}",
                   "--ip=127.0.0.1", f"--port={self.port}", f"--ServerApp.root_dir={root}",
                   "--ServerApp.port_retries=0", "--LabApp.expose_app_in_browser=True"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            command.append("--allow-root")
        self.log = home / "jupyterlab.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(command, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while not self._alive():
            if self.process.poll() is not None or time.monotonic() > deadline:
                tail = self.log.read_text(errors="replace").strip().splitlines()[-15:]
                self.stop()
                raise RuntimeError("JupyterLab did not start; the end of its log:\n" + "\n".join(tail))
            time.sleep(0.3)

    def url(self, path: str, reset: bool = False) -> str:
        return f"{self.base}{path}?{'reset&' if reset else ''}token={self.token}"

    def _api(self, method: str, path: str):
        return requests.request(method, f"{self.base}api/{path}", timeout=30,
                                headers={"Authorization": f"token {self.token}"})

    def _alive(self) -> bool:
        try:
            return self._api("GET", "status").ok
        except requests.RequestException:
            return False

    def shutdown_kernels(self) -> None:
        """End every kernel (the lesson just measured), so the next lesson runs alone."""
        try:
            for kernel in self._api("GET", "kernels").json():
                self._api("DELETE", f"kernels/{kernel['id']}")
        except requests.RequestException:
            pass  # stop() ends the whole process group anyway

    def stop(self) -> None:
        """Terminate the server and its kernels (its process group); kill them if they linger."""
        if self.process.poll() is None:
            self.shutdown_kernels()
        for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                break
            try:
                self.process.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue


class _sigterm_as_exit:
    """Turn SIGTERM into SystemExit while running (main thread only), so cleanup still runs."""

    def __enter__(self):
        self.previous = None
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGTERM, self._exit)
        return self

    @staticmethod
    def _exit(signum, frame):
        raise SystemExit(128 + signum)

    def __exit__(self, *exc):
        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)
        return False


def format_results(result: dict) -> str:
    if "skipped" in result:
        return f"lesson_slider_latency: skipped ({result['skipped']})"
    rows = []
    for r in result["lessons"]:
        row = {"lesson": r["lesson"].removesuffix(".ipynb"), "open_s": r.get("open_s"),
               "run_all_s": r.get("run_all_s")}
        if "redraw_s" in r:
            row.update(slider=f"{r['slider']} {r['values'][0]} -> {r['values'][-1]}", steps=r["redraw_s"]["n"],
                       first=r["first_change_s"]["median"], median=r["redraw_s"]["median"],
                       max=r["redraw_s"]["max"])
        rows.append(row)
    columns = [("lesson", "lesson"), ("open_s", "open s"), ("run_all_s", "run all s"), ("slider", "slider"),
               ("steps", "steps"), ("first", "first change s (median)"), ("median", "redraw s median"),
               ("max", "redraw s max")]
    title = (f"Lessons in JupyterLab, headless chromium: Run All, then {result['steps']} arrow-key steps of "
             f"{'every slider' if result.get('every_slider') else 'the first slider'} "
             f"(load average {result['load_average']:.1f} before, "
             f"{result['load_average_after']:.1f} after)")
    lines = [_common.table(rows, columns, title=title),
             "redraw = key press to the output's last change painted (kernel idle, then "
             f"{result['quiet_ms']} ms without change); first change = the old charts replaced"]
    lines += [f"  {r['lesson']}: FAILED: {r['error']}" for r in result["lessons"] if "error" in r]
    return "\n".join(lines)


def main(argv=None) -> int:
    """``script_main``'s options plus ``--lessons`` and ``--steps``."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--lessons", nargs="+", metavar="PREFIX",
                        help="lessons to time, by file-name prefix, e.g. 01 03 (default: all; --quick: 01)")
    parser.add_argument("--steps", type=int, help=f"slider steps per lesson (default {STEPS}; --quick {QUICK_STEPS})")
    parser.add_argument("--every-slider", action="store_true",
                        help="time every slider of the lesson's widget, one row each (default: the first)")
    own, rest = parser.parse_known_args(argv)
    try:
        _common.select_lessons(own.lessons)
    except ValueError as error:
        parser.error(str(error))
    if "-h" in rest or "--help" in rest:
        parser.print_help()
        print()

    def run_selected(quick: bool = False) -> dict:
        return run(quick=quick, lessons=own.lessons, steps=own.steps, every_slider=own.every_slider)

    return _common.script_main(rest, doc=__doc__, run=run_selected, format_results=format_results,
                               passed_key=CORRECTNESS_KEY)


if __name__ == "__main__":
    sys.exit(main())
