"""The experiments the dashboard pages and the lessons run, without Panel.

One module per family: which learners race on a stream, the hindsight comparators and
exact quantities they are measured against, and the per-round metrics. A dashboard page
(:mod:`explorer.dashboard.pages`) is a thin view over one of these and
:class:`explorer.race.Race`; a notebook calls the same functions.
"""
