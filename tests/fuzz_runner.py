"""Run one attack family on one fuzz registry entry in a child process, and tally it.

Each (entry, family) pair runs in a fresh child forked from a ``forkserver`` that has
already imported the registry (so a child starts in milliseconds and shares no threads or
Dask pools with the test process). In the child:

- the entry is warmed up on its valid sample (lazy imports and caches are not counted),
  then the baseline is the child's peak RSS (``ru_maxrss``); the peak over it after each
  input is the memory that input cost, and the family reports its worst input;
- the address space is capped at :data:`ADDRESS_GUARD` over what the child has mapped, so
  a zip bomb that gets through fails with a ``MemoryError`` instead of taking the machine;
- every call (and its acceptance check) has :data:`CALL_SECONDS` (``SIGALRM``): a call
  still running then is a hang; the whole family has :data:`FAMILY_SECONDS`;
- outcomes: refused cleanly (a ``ValueError`` with the observed state unchanged), state
  changed on refusal, accepted soundly (the entry's check passed), accepted unsoundly,
  other exceptions, hangs, and refusals whose message advises loading pickled data (numpy's
  "allow_pickle=True ... if you trust the file": no message may advise unpickling).

The child leaves with ``os._exit`` once it has sent its tally: a thread stuck on a FIFO
must not keep it alive.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import resource
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["CALL_SECONDS", "FAMILY_SECONDS", "ADDRESS_GUARD", "OUTCOMES", "SCALE", "run_family"]

CALL_SECONDS = 15.0
FAMILY_SECONDS = 240.0
ADDRESS_GUARD = 1536 << 20
OUTCOMES = ("refused cleanly", "accepted soundly", "state changed on refusal", "accepted unsoundly",
            "other exceptions", "hangs", "refusal messages advising pickle")
_PICKLE_ADVICE = re.compile(r"allow_pickle\s*=\s*True|if you trust|pickle\.load", re.IGNORECASE)
_KEPT_FAILURES = 8
SCALE = max(1, int(os.environ.get("FUZZ_SCALE", "1") or 1))
"""``FUZZ_SCALE=k``: k times the hypothesis examples of every family, drawn at random (a
longer campaign than CI's; CI's run, k = 1, is derandomized and always the same)."""


class CallTimedOut(BaseException):
    """Raised by the alarm in the middle of a call (a BaseException: ``except Exception``
    in the code under test must not swallow it)."""


def _alarm(signum, frame):
    raise CallTimedOut()


def _max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _mapped_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 240 else f"{text[:160]} ...({len(text)} characters)... {text[-60:]}"


def _describe(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text[:300]}"


class _Tally:
    def __init__(self, entry, root: Path):
        self.entry, self.root = entry, root
        self.counts = dict.fromkeys(("tried", *OUTCOMES), 0)
        self.failures: list[str] = []
        self.baseline = _max_rss_mb()
        self.worst = (0.0, "")

    def fail(self, outcome: str, value, what: str) -> None:
        self.counts[outcome] += 1
        if len(self.failures) < _KEPT_FAILURES:
            self.failures.append(f"{outcome}: {_shown(value)} -> {what}")

    def one(self, value) -> None:
        entry = self.entry
        scratch = Path(tempfile.mkdtemp(dir=self.root))
        self.counts["tried"] += 1
        home = os.getcwd()
        os.chdir(scratch)  # a relative path in a fuzzed input (``--out 2``) lands in the scratch
        signal.setitimer(signal.ITIMER_REAL, CALL_SECONDS)
        try:
            subject = entry.setup(value, scratch)
            before = entry.observe(subject, scratch)
            try:
                result = entry.call(subject, value, scratch)
            except ValueError as error:
                if not entry.refuses:
                    self.fail("other exceptions", value, _describe(error))
                elif entry.observe(subject, scratch) != before:
                    self.fail("state changed on refusal", value, _describe(error))
                elif _PICKLE_ADVICE.search(str(error)):
                    self.fail("refusal messages advising pickle", value, _describe(error))
                else:
                    self.counts["refused cleanly"] += 1
            else:
                try:
                    entry.accept(subject, value, result, scratch)
                except Exception as error:  # noqa: BLE001 (what the accepted result failed)
                    self.fail("accepted unsoundly", value, _describe(error))
                else:
                    self.counts["accepted soundly"] += 1
        except CallTimedOut:
            self.fail("hangs", value, f"still running after {CALL_SECONDS:g} s")
        except Exception as error:  # noqa: BLE001 (the point of the suite: nothing but ValueError)
            self.fail("other exceptions", value, _describe(error))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            os.chdir(home)
            shutil.rmtree(scratch, ignore_errors=True)
        peak = _max_rss_mb() - self.baseline
        if peak > self.worst[0]:
            self.worst = (peak, _shown(value))

    def report(self, seconds: float) -> dict:
        return {**self.counts, "peak MB over baseline": round(self.worst[0], 1),
                "worst input": self.worst[1], "failures": self.failures, "seconds": round(seconds, 1)}


def _run_values(tally: _Tally, family) -> None:
    if family.strategy is None:
        for value in family.values():
            tally.one(value)
        return
    from hypothesis import HealthCheck, Phase, given, settings

    @settings(max_examples=family.examples * SCALE, derandomize=SCALE == 1, deadline=None, database=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(family.strategy())
    def run(value):
        tally.one(value)

    run()


def _settle_compiles() -> None:
    """numba's compile (a background thread, started by the first FD shrink or SON round that
    wants it) belongs to the warm-up, whether or not the warm-up's own input started it: it
    ends before the baseline is taken and the address space capped, or numba's import and
    LLVM's memory would be charged to whichever input runs beside it."""
    compiled = sys.modules.get("explorer.compiled")
    if compiled is not None:
        compiled.wait(timeout=120.0)  # starts it if need be (nothing without numba)


def _child(entry_name: str, family_name: str, connection) -> None:
    import fuzz_registry

    started = time.monotonic()
    try:
        entry = fuzz_registry.ENTRIES[entry_name]
        family = entry.families[family_name]
        signal.signal(signal.SIGALRM, _alarm)
        root = Path(tempfile.mkdtemp(prefix="fuzz-"))
        warm = Path(tempfile.mkdtemp(dir=root))
        signal.setitimer(signal.ITIMER_REAL, 4 * CALL_SECONDS)
        entry.warm_up(warm)  # lazy imports and caches; the valid sample must be accepted
        signal.setitimer(signal.ITIMER_REAL, 0)
        _settle_compiles()
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (_mapped_bytes() + ADDRESS_GUARD, hard))
        tally = _Tally(entry, root)
        _run_values(tally, family)
        connection.send(tally.report(time.monotonic() - started))
        shutil.rmtree(root, ignore_errors=True)
    except BaseException as error:  # noqa: BLE001 (reported to the test, which fails)
        import traceback

        where = "".join(traceback.format_exception(error)[-6:])
        connection.send({"error": f"the family could not run: {_describe(error)}\n{where}"})
    finally:
        connection.close()
        os._exit(0)


_CONTEXT = None


def _context():
    """The forkserver context, its server started with the registry imported. Python 3.11's
    forkserver ignores the ``sys_path`` it is handed, so tests/ reaches it through
    ``PYTHONPATH``; ``MALLOC_ARENA_MAX=2`` keeps glibc from reserving 64 MiB of address
    space per thread (a machine with many cores would otherwise hit :data:`ADDRESS_GUARD`
    with Dask's threads alone). Both are set only while the server starts."""
    global _CONTEXT
    if _CONTEXT is None:
        from multiprocessing import forkserver

        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["fuzz_registry"])
        path = os.environ.get("PYTHONPATH")
        settings = {"PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parent), *([path] if path else [])]),
                    "MALLOC_ARENA_MAX": "2"}
        saved = {name: os.environ.get(name) for name in settings}
        os.environ.update(settings)
        try:
            forkserver.ensure_running()
        finally:
            for name, value in saved.items():
                if value is None:
                    del os.environ[name]
                else:
                    os.environ[name] = value
        _CONTEXT = context
    return _CONTEXT


def run_family(entry_name: str, family_name: str) -> dict:
    """The tally of one family on one entry (see the module docstring), run in a child."""
    context = _context()
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(entry_name, family_name, sender), daemon=True)
    process.start()
    sender.close()
    try:
        if receiver.poll(FAMILY_SECONDS * SCALE):
            result = receiver.recv()
        else:
            result = {"tried": 0, "hangs": 1, "failures": [f"the family ran past {FAMILY_SECONDS:g} s"]}
    except EOFError:
        result = {"error": f"the child died (exit code {process.exitcode}) before reporting"}
    finally:
        process.join(5)
        if process.is_alive():
            process.kill()
            process.join()
        receiver.close()
    return result
