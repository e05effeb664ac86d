"""Tests for explorer.distributed: Frequent Directions on Dask, chunk sketches merged in a tree.

The guarantees (Ghashami, Liberty, Phillips, Woodruff 2016, Theorem 1.1 and section 3.1)
are checked on random data, random chunkings and random fan-ins; tolerances scale with
``||A||_F^2``. Speed is measured in benchmarks/distributed.py, never here.
"""

from __future__ import annotations

import pickle
import sys

import dask
import dask.array as da
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from explorer import FrequentDirections, RobustFrequentDirections, merge
from explorer.distributed import certified_bounds, open_rows, sketch_array, sketch_graph
from explorer.sketch import from_bytes

RTOL = 1e-9  # of ||A||_F^2: rounding in A^T A and B^T B, far below any real violation


def rows(n: int, d: int, seed: int) -> np.ndarray:
    """Rows of very different norms on a low-rank signal plus noise (some rows all zero)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, min(d, 3))) @ rng.standard_normal((min(d, 3), d)) * 5
    X += rng.standard_normal((n, d))
    X *= 10.0 ** rng.uniform(-2, 2, size=(n, 1))
    X[rng.random(n) < 0.1] = 0.0
    return X


def chunk_sketches(A, m, sizes, kind="fd", **options):
    """One sketch per chunk of ``sizes`` rows (an int: equal chunks, the last one shorter)."""
    if isinstance(sizes, int):
        sizes = [min(sizes, A.shape[0] - start) for start in range(0, A.shape[0], sizes)]
    cls = {"fd": FrequentDirections, "rfd": RobustFrequentDirections}[kind]
    parts, start = [], 0
    for size in sizes:
        part = cls(A.shape[1], m, **options)
        part.extend(A[start:start + size])
        parts.append(part)
        start += size
    return parts


def assert_identical(a, b):
    assert type(a) is type(b)
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for key in sa:
        assert np.array_equal(sa[key], sb[key]), key


@st.composite
def chunkings(draw):
    """A row count and a split of it into chunks of any sizes (empty chunks included)."""
    n = draw(st.integers(1, 60))
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=12)))
    return n, tuple(np.diff([0, *cuts, n]).tolist())


@settings(max_examples=40, deadline=None)
@given(chunking=chunkings(), d=st.integers(1, 6), m=st.integers(2, 5), split_every=st.integers(2, 5),
       fast=st.booleans(), rfd=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_the_fd_guarantee_holds_for_any_chunking_and_tree(chunking, d, m, split_every, fast, rfd, seed):
    n, sizes = chunking
    A = rows(n, d, seed)
    kind, options = ("rfd", {"alpha0": 0.5}) if rfd else ("fd", {})
    X = da.from_array(A, chunks=(sizes, d))
    sk = sketch_array(X, m, kind=kind, fast=fast, split_every=split_every, **options)
    assert sk.n_seen == n and sk.m == m and sk.fast == fast
    mass = float(np.sum(A ** 2))
    assert np.isclose(sk.frobenius_squared, mass, rtol=1e-12, atol=0)
    tol = RTOL * max(mass, 1e-300)
    B = sk.rows
    error = A.T @ A - B.T @ B
    eigenvalues = np.linalg.eigvalsh(error)
    assert eigenvalues.min() >= -tol  # A^T A - B^T B is PSD
    delta = sk.delta_total
    assert eigenvalues.max() <= delta + tol  # ||A^T A - B^T B||_2 <= Delta
    tails = mass - np.concatenate([[0.0], np.cumsum(np.linalg.svd(A, compute_uv=False) ** 2)])
    paper = min(tails[k] / (m - k) for k in range(min(m, tails.size)))
    assert delta <= paper + tol  # Delta <= min_k ||A - A_k||_F^2 / (m - k)
    assert paper <= certified_bounds(sk)["tail_bound"] + tol  # what the sketch certifies is above it
    if rfd:  # the two-sided bound of Robust FD, around A^T A + alpha0 I
        two_sided = np.linalg.eigvalsh(A.T @ A + 0.5 * np.eye(d) - sk.gram())
        assert np.abs(two_sided).max() <= delta / 2 + tol
        assert sk.alpha == 0.5 + delta / 2
    # the tree is the documented one: explorer.merge over the chunks' sketches, in order
    assert_identical(sk, merge(chunk_sketches(A, m, sizes, kind, fast=fast, **options), split_every=split_every))


def test_one_chunk_is_one_sequential_sketch():
    A = rows(300, 8, seed=1)
    sequential = FrequentDirections(8, 4, fast=True)
    sequential.extend(A)
    assert_identical(sketch_array(A, 4), sequential)


@pytest.mark.blas_kernels
def test_deterministic_given_the_chunking_on_any_number_of_threads():
    A = rows(2000, 12, seed=2)
    first = sketch_array(A, 5, chunk_rows=97, split_every=3)
    with dask.config.set(scheduler="threads", num_workers=1):
        one_thread = sketch_array(A, 5, chunk_rows=97, split_every=3)
    with dask.config.set(scheduler="threads", num_workers=2):
        two_threads = sketch_array(A, 5, chunk_rows=97, split_every=3)
    with dask.config.set(scheduler="sync"):
        synchronous = sketch_array(A, 5, chunk_rows=97, split_every=3)
    for other in (one_thread, two_threads, synchronous):
        assert_identical(first, other)


def test_a_dask_array_is_sketched_by_its_own_row_chunks_with_its_columns_joined():
    A = rows(500, 9, seed=3)
    X = da.from_array(A, chunks=(70, 4))  # column chunks are joined into one
    assert open_rows(X).chunks == ((70,) * 7 + (10,), (9,))
    assert_identical(sketch_array(X, 3, split_every=2), sketch_array(A, 3, split_every=2, chunk_rows=70))


def test_a_memory_mapped_npy_gives_the_same_sketch_as_the_array(tmp_path):
    A = rows(1000, 7, seed=4)
    np.save(tmp_path / "rows.npy", A)
    X = open_rows(tmp_path / "rows.npy", chunk_rows=128)
    assert isinstance(X, da.Array) and X.chunks[0][0] == 128
    from_path = sketch_array(str(tmp_path / "rows.npy"), 4, chunk_rows=128)
    assert_identical(from_path, sketch_array(A, 4, chunk_rows=128))


def test_float32_and_integer_rows_are_sketched_as_float64(tmp_path):
    A = np.random.default_rng(5).integers(-5, 6, size=(200, 4))
    np.save(tmp_path / "ints.npy", A)
    np.save(tmp_path / "singles.npy", A.astype(np.float32))
    expected = sketch_array(A.astype(float), 3, chunk_rows=50)
    for name in ("ints.npy", "singles.npy"):
        assert_identical(sketch_array(tmp_path / name, 3, chunk_rows=50), expected)


def test_npz_with_one_array_or_a_named_one(tmp_path):
    A = rows(120, 5, seed=6)
    np.savez(tmp_path / "one.npz", rows=A)
    np.savez(tmp_path / "two.npz", rows=A, labels=np.arange(120.0)[:, None])
    expected = sketch_array(A, 3, chunk_rows=40)
    assert_identical(sketch_array(tmp_path / "one.npz", 3, chunk_rows=40), expected)
    assert_identical(sketch_array(tmp_path / "two.npz", 3, chunk_rows=40, key="rows"), expected)
    with pytest.raises(ValueError, match="holds 2 arrays .*name one with key"):
        open_rows(tmp_path / "two.npz")
    with pytest.raises(ValueError, match="no array 'X'; it holds"):
        open_rows(tmp_path / "two.npz", key="X")


def test_zarr_store(tmp_path):
    zarr = pytest.importorskip("zarr")
    A = rows(300, 6, seed=7)
    store = zarr.open(str(tmp_path / "rows.zarr"), mode="w", shape=A.shape, chunks=(64, 3), dtype="f8")
    store[:] = A
    X = open_rows(tmp_path / "rows.zarr")
    assert X.chunks == ((64,) * 4 + (44,), (6,))  # the store's row chunks, its columns joined
    assert_identical(sketch_array(X, 3), sketch_array(A, 3, chunk_rows=64))


def test_parquet_numeric_columns_by_row_group(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    A = rows(250, 3, seed=8)
    table = pa.table({"a": A[:, 0], "name": [f"row {i}" for i in range(250)], "b": A[:, 1],
                      "c": (A[:, 2] * 100).astype(np.int64)})
    pq.write_table(table, tmp_path / "rows.parquet", row_group_size=100)
    X = open_rows(tmp_path / "rows.parquet")
    assert X.chunks == ((100, 100, 50), (3,))  # the string column is left out
    expected = np.column_stack([A[:, 0], A[:, 1], (A[:, 2] * 100).astype(np.int64)])
    assert_identical(sketch_array(X, 2), sketch_array(expected, 2, chunk_rows=100))


@pytest.mark.parametrize("package, suffix", [("zarr", ".zarr"), ("pyarrow", ".parquet")])
def test_a_missing_optional_reader_says_what_to_install(tmp_path, monkeypatch, package, suffix):
    path = tmp_path / f"data{suffix}"
    path.mkdir() if suffix == ".zarr" else path.write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, package, None)  # `import package` now raises ImportError
    monkeypatch.setitem(sys.modules, f"{package}.parquet", None)
    with pytest.raises(ValueError, match=f"pip install {package}"):
        open_rows(path)


def test_a_chunk_with_nan_or_inf_is_named_by_its_rows():
    A = rows(400, 5, seed=9)
    A[250, 2] = np.nan
    with pytest.raises(ValueError, match=r"rows 200\.\.299 \(a chunk\): row 250 contains NaN or inf"):
        sketch_array(A, 3, chunk_rows=100)
    A[250, 2], A[3, 0] = 1.0, -np.inf
    with pytest.raises(ValueError, match=r"rows 0\.\.99 \(a chunk\): row 3 contains NaN or inf"):
        sketch_array(da.from_array(A, chunks=(100, 5)), 3)


def test_a_chunk_never_calls_lapack_on_non_finite_rows(monkeypatch):
    import explorer.sketch.shrink

    svd, fed_non_finite = explorer.sketch.shrink.scipy.linalg.svd, []

    def watched_svd(B, *args, **kwargs):  # other chunks' tasks may still be shrinking finite rows
        fed_non_finite.append(not np.isfinite(B).all())
        return svd(B, *args, **kwargs)

    monkeypatch.setattr(explorer.sketch.shrink.scipy.linalg, "svd", watched_svd)
    A = rows(300, 4, seed=10)  # buffers at least as tall as wide (d <= 2m) shrink through the SVD
    sketch_array(A, 3, chunk_rows=100, split_every=2)
    assert fed_non_finite  # the watch sees the shrinks
    A[140] = np.inf
    with pytest.raises(ValueError, match="row 140 contains NaN or inf"):
        sketch_array(A, 3, chunk_rows=100, split_every=2)
    with dask.config.set(scheduler="sync"):  # every other chunk runs to its end first
        with pytest.raises(ValueError, match="row 140 contains NaN or inf"):
            sketch_array(A, 3, chunk_rows=100, split_every=2)
    assert not any(fed_non_finite)


@pytest.mark.parametrize("X, options, message", [
    (np.ones(5), {}, "must be 2-D"),
    (np.ones((2, 3, 4)), {}, "must be 2-D"),
    (np.ones((0, 3)), {}, "at least one row and one column"),
    (np.ones((3, 0)), {}, "at least one row and one column"),
    (np.array([["a", "b"]]), {}, "must hold real numbers"),
    ([[1.0, 2.0]], {}, "X must be a dask.array, a numpy array or a path"),
    (np.ones((5, 3)), {"m": 1}, "m must be an integer >= 2"),
    (np.ones((5, 3)), {"kind": "gfd"}, "kind must be one of 'fd', 'rfd'"),
    (np.ones((5, 3)), {"split_every": 1}, "split_every must be an integer >= 2"),
    (np.ones((5, 3)), {"split_every": 2.5}, "split_every must be an integer >= 2"),
    (np.ones((5, 3)), {"alpha0": 1.0}, "kind='fd' allows only alpha0=0"),
    (np.ones((5, 3)), {"kind": "rfd", "alpha0": -1.0}, "alpha0 must be a finite number"),
    (np.ones((5, 3)), {"fast": "yes"}, "fast must be True or False"),
    (np.ones((5, 3)), {"chunk_rows": 0}, "chunk_rows must be an integer >= 1"),
    (np.ones((5, 3)), {"progress": "yes"}, "progress must be True or False"),
    (np.ones((5, 3)), {"key": "X"}, "key names an array inside"),
])
def test_bad_arguments_say_what_is_allowed(X, options, message):
    options = {"m": 3, **options}
    with pytest.raises(ValueError, match=message):
        sketch_array(X, options.pop("m"), **options)


def test_bad_paths_say_what_is_allowed(tmp_path):
    with pytest.raises(ValueError, match="no file or folder at"):
        open_rows(tmp_path / "missing.npy")
    (tmp_path / "rows.csv").write_text("1,2\n")
    with pytest.raises(ValueError, match=r"unknown format \.csv; allowed: \.npy, \.npz, \.zarr, \.parquet"):
        open_rows(tmp_path / "rows.csv")
    (tmp_path / "broken.npy").write_bytes(b"not an array")
    with pytest.raises(ValueError, match="not a readable .npy array"):
        open_rows(tmp_path / "broken.npy")
    (tmp_path / "broken.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a readable .npz archive"):
        open_rows(tmp_path / "broken.npz")


def test_a_pickled_npy_is_refused_not_unpickled(tmp_path):
    np.save(tmp_path / "objects.npy", np.array([[object(), 1]], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="not a readable .npy array"):
        open_rows(tmp_path / "objects.npy")


def test_the_graph_is_a_tree_of_sketch_and_merge_tasks():
    graph = sketch_graph(np.ones((100, 3)), 2, chunk_rows=10, split_every=3)  # 10 leaves
    keys = [key for key in graph.dask if isinstance(key, tuple)]
    leaves = [key for key in keys if key[0].startswith("sketch-")]
    merges = sorted(key[1:] for key in keys if key[0].startswith("merge-"))
    assert len(leaves) == 10
    assert merges == [(1, 0), (1, 1), (1, 2), (1, 3), (2, 0), (2, 1), (3, 0)]  # 10 -> 4 -> 2 -> 1
    assert graph.key[0].startswith("merge-") and graph.key[1:] == (3, 0)
    single = sketch_graph(np.ones((5, 3)), 2)
    assert single.key[0].startswith("merge-") and single.key[1:] == (1, 0)  # one chunk, one root


def test_reading_a_chunk_and_sketching_it_is_one_task(tmp_path):
    """So on a cluster the rows stay on the worker that reads them: only sketches travel."""
    np.save(tmp_path / "rows.npy", rows(100, 3, seed=15))
    graph = sketch_graph(tmp_path / "rows.npy", 2, chunk_rows=10, split_every=3)
    names = sorted(str(key[0] if isinstance(key, tuple) else key).split("-")[0] for key in graph.dask)
    assert names == ["merge"] * 7 + ["original"] + ["sketch"] * 10  # "original": the file's path and shape


def test_progress_bar(capsys):
    sketch_array(rows(100, 4, seed=11), 2, chunk_rows=20, progress=True)
    assert "100% Completed" in capsys.readouterr().out


def test_partial_sketches_travel_between_processes():
    """What a distributed worker sends another: the sketch object, pickled by Dask."""
    part = chunk_sketches(rows(90, 6, seed=12), 3, 90, "rfd", alpha0=0.25, fast=True)[0]
    assert_identical(pickle.loads(pickle.dumps(part)), part)
    assert_identical(from_bytes(part.to_bytes()), part)  # and what --out saves


def test_a_local_cluster_gives_the_threaded_result_bit_for_bit():
    distributed = pytest.importorskip("distributed")
    A = rows(1500, 10, seed=13)
    threaded = sketch_array(A, 4, chunk_rows=100, split_every=4)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=":0") as cluster, distributed.Client(cluster):
        on_cluster = sketch_array(A, 4, chunk_rows=100, split_every=4)
    assert_identical(on_cluster, threaded)


def test_certified_bounds_bracket_the_papers_bound():
    A = rows(400, 10, seed=14)
    sk = sketch_array(A, 4, chunk_rows=50, split_every=2)
    bounds = certified_bounds(sk)
    mass = float(np.sum(A ** 2))
    tails = mass - np.concatenate([[0.0], np.cumsum(np.linalg.svd(A, compute_uv=False) ** 2)])
    paper = min(tails[k] / (4 - k) for k in range(4))
    assert bounds["spectral_error"] == sk.delta_total <= paper * (1 + RTOL) <= bounds["tail_bound"] * (1 + RTOL)
    assert np.isclose(bounds["mass_captured"], np.sum(sk.rows ** 2) / mass)
    sigma_A, sigma_B = np.linalg.svd(A, compute_uv=False)[:4], sk.singular_values()[:4]
    assert np.all(sigma_B <= sigma_A * (1 + RTOL))  # sigma_i(A) in [sigma_i(B), sqrt(sigma_i(B)^2 + Delta)]
    assert np.all(sigma_A ** 2 <= (sigma_B ** 2 + sk.delta_total) * (1 + RTOL))
