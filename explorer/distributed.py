r"""Sketching data that does not fit in memory, on Dask (docs/algorithms.md section 1.3; docs/merging.md).

Frequent Directions is *mergeable* (Ghashami, Liberty, Phillips, Woodruff 2016, the section
on parallelization; Agarwal et al. 2012): sketch every partition of the rows on its own,
merge the sketches in a tree, and the union of the rows has the same guarantee as one
sequential sketch, with ``Delta = delta_total`` summed over every shrink in the leaves and
in the merges:

- ``A^T A - B^T B`` is positive semidefinite;
- ``||A^T A - B^T B||_2 <= Delta <= min_k ||A - A_k||_F^2 / (m - k)``.

:func:`sketch_array` sketches each row chunk of a ``dask.array`` (FrequentDirections or
RobustFrequentDirections of size ``m``) and merges ``split_every`` partial sketches at a
time with :func:`explorer.merge`, in the tree of Dask tasks :func:`sketch_graph` returns
(``.visualize()`` draws it). The tree is fixed by the chunking and ``split_every``, not by
the scheduler, so the result is the same bit for bit on Dask's threaded scheduler and on a
``distributed.Client``. :func:`open_rows` opens the input lazily: a ``dask.array``, a numpy
array, or a path to a ``.npy`` file, an ``.npz`` archive, a zarr store or a parquet file.
Memory is O(m d) per task plus one chunk of rows, never the data.

>>> import numpy as np
>>> A = np.random.default_rng(0).standard_normal((1000, 6))
>>> sk = sketch_array(A, 4, chunk_rows=100, split_every=4)   # 10 chunks, a tree of depth 2
>>> sk.n_seen, sk.m, sk.fast
(1000, 4, True)
>>> bool(np.linalg.eigvalsh(A.T @ A - sk.gram()).min() > -1e-9 * np.sum(A ** 2))
True
>>> bool(np.linalg.norm(A.T @ A - sk.gram(), 2) <= sk.delta_total * (1 + 1e-9))
True
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import numpy as np

from ._validation import check_choice, check_float, check_int, check_matrix_size
from .archive import ArchiveError, ArrayHeader, MappedArray, npy_header, open_npz
from .merging import merge
from .sketch import FrequentDirections, RobustFrequentDirections

__all__ = ["KINDS", "FORMATS", "MAX_INFLATED_BYTES", "open_rows", "sketch_graph", "sketch_array",
           "certified_bounds", "node_sketch"]

#: The sketches :func:`sketch_array` builds, by ``kind``.
KINDS = {"fd": FrequentDirections, "rfd": RobustFrequentDirections}
#: The file formats :func:`open_rows` reads, by suffix (a folder is read as a zarr store).
FORMATS = (".npy", ".npz", ".zarr", ".parquet")
#: The largest compressed ``.npz`` member :func:`open_rows` inflates into memory (256 MiB):
#: a compressed member cannot be memory-mapped, and its header may declare far more than
#: the file holds. Save with ``np.savez`` (stored members are memory-mapped) or ``np.save``.
MAX_INFLATED_BYTES = 2 ** 28


# -- opening the rows ----------------------------------------------------------------------
def open_rows(source, *, key: str | None = None, chunk_rows: int | None = None):
    """``source`` as a 2-D ``dask.array`` chunked by rows (all columns in one chunk), lazily.

    ``source``: a ``dask.array``, a numpy array, or a path (``str`` / ``Path``) to

    - ``.npy``: memory-mapped (its header read by :mod:`explorer.archive`, never
      unpickled): each chunk's task maps the file, copies its rows and lets the map go, so
      a process holds one chunk, never the file, and a task sent to another process
      carries the path, not the data; a task finds the file changed since it was opened
      (size, time, inode) and refuses it (``ValueError``) rather than read other rows;
    - ``.npz``: the archive's only array, or the one named ``key``, checked by
      :func:`explorer.archive.open_npz`; a stored member (``np.savez``) is memory-mapped
      like a ``.npy``, a compressed one (``np.savez_compressed``) is read whole, at most
      :data:`MAX_INFLATED_BYTES` (save a ``.npy``, an uncompressed ``.npz`` or zarr for
      larger data);
    - zarr (a folder, or a path ending in ``.zarr``): the array, or the array ``key`` of a
      group; needs the ``zarr`` package;
    - ``.parquet``: its integer and floating columns (one chunk per row group); needs
      ``pyarrow``.

    ``chunk_rows``: rows per chunk (default: the source's own chunks; Dask's "auto", about
    128 MiB per chunk, for numpy arrays and ``.npy``/``.npz``). Nothing is read here except
    metadata; values (NaN or inf) are checked chunk by chunk while sketching.

    Raises ``ValueError`` (a missing file, a FIFO, device or other special file, an unknown
    format, a damaged or malicious archive, a missing optional package, no ``key`` where
    several arrays exist, not 2-D, not real numbers, no rows or no columns).

    >>> import numpy as np
    >>> open_rows(np.ones((10, 3)), chunk_rows=4).chunks
    ((4, 4, 2), (3,))
    """
    import dask.array as da

    if chunk_rows is not None:
        chunk_rows = check_int("chunk_rows", chunk_rows, minimum=1)
    if isinstance(source, (str, Path)):
        X = _open_path(Path(source), key, chunk_rows)
    else:
        if key is not None:
            raise ValueError(f"key names an array inside an .npz, zarr group; got key={key!r} "
                             f"with a {type(source).__name__}")
        if isinstance(source, da.Array):
            X = source
        elif isinstance(source, np.ndarray):
            _check_shape(source.shape, source.dtype, "X")
            X = da.from_array(source, chunks=(chunk_rows or "auto", -1))
        else:
            raise ValueError(f"X must be a dask.array, a numpy array or a path to one of "
                             f"{', '.join(FORMATS)}; got {type(source).__name__}")
    _check_shape(X.shape, X.dtype, "X")
    if any(np.isnan(c) for c in X.chunks[0]):
        raise ValueError("X has unknown chunk sizes (rows); call X.compute_chunk_sizes() first")
    if chunk_rows is not None and X.chunks[0] != _even_chunks(X.shape[0], chunk_rows):
        X = X.rechunk({0: chunk_rows})
    return X.rechunk({1: -1}) if len(X.chunks[1]) > 1 else X


def _even_chunks(n: int, size: int) -> tuple[int, ...]:
    return (size,) * (n // size) + ((n % size,) if n % size else ())


def _check_shape(shape: tuple, dtype, name: str) -> None:
    if len(shape) != 2:
        raise ValueError(f"{name} must be 2-D (rows x columns), got shape {shape}")
    if np.dtype(dtype).kind not in "biuf":
        raise ValueError(f"{name} must hold real numbers (bool, int or float), got dtype {dtype}")
    if shape[0] == 0 or shape[1] == 0:
        raise ValueError(f"{name} must have at least one row and one column, got shape {shape}")


def _open_path(path: Path, key: str | None, chunk_rows: int | None):
    if not path.exists():
        raise ValueError(f"no file or folder at {path}")
    suffix = path.suffix.lower()
    if suffix == ".zarr" or path.is_dir():
        return _open_zarr(path, key, chunk_rows)
    if suffix == ".npy":
        if key is not None:
            raise ValueError(f"{path}: a .npy file holds one array; key={key!r} is for .npz and zarr")
        try:
            header = npy_header(path, str(path))
        except ArchiveError as error:
            raise ValueError(f"{path} is not a readable .npy array of numbers: {error.reason}") from None
        return _from_rows(MappedArray(path, 0, _data_header(path, header, str(path))), chunk_rows, None)
    if suffix == ".npz":
        try:
            return _open_npz(path, key, chunk_rows)
        except ArchiveError as error:
            raise ValueError(f"{path} is not a readable .npz archive: {error.reason}") from None
    if suffix == ".parquet":
        return _open_parquet(path, key)
    raise ValueError(f"{path}: unknown format {suffix or '(no suffix)'}; allowed: {', '.join(FORMATS)} "
                     "(or a zarr folder)")


def _data_header(path: Path, header: ArrayHeader, what: str) -> ArrayHeader:
    """``header`` if it declares a 2-D array of real numbers with rows and columns."""
    _check_shape(header.shape, header.dtype, what)
    return header


def _from_rows(rows: "MappedArray", chunk_rows: int | None, key: str | None):
    import dask.array as da
    from dask.base import tokenize

    name = "npy-" + tokenize(rows.path, rows.identity, rows.offset, key, chunk_rows)
    return da.from_array(rows, chunks=(chunk_rows or "auto", -1), name=name,
                         meta=np.empty((0, 0), rows.dtype))


def _open_npz(path: Path, key: str | None, chunk_rows: int | None):
    import dask.array as da

    with open_npz(path, str(path), limit=sys.maxsize) as archive:
        names = list(archive)
        if key is None and len(names) != 1:
            raise ValueError(f"{path} holds {len(names)} arrays ({', '.join(names) or 'none'}); name one with key")
        if key is not None and key not in names:
            raise ValueError(f"{path} has no array {key!r}; it holds {', '.join(names)}")
        key = key if key is not None else names[0]
        header = _data_header(path, archive.header(key), f"{path}[{key}]")
        offset = archive.data_offset(key)
        if offset is not None:  # stored: memory-mapped like a .npy
            return _from_rows(MappedArray(path, offset - header.offset, header), chunk_rows, key)
        if header.nbytes > MAX_INFLATED_BYTES:
            raise ArchiveError(str(path), f"array {key!r} is compressed and declares {header.nbytes} bytes; "
                                          f"a compressed member is read whole, at most {MAX_INFLATED_BYTES} "
                                          "bytes (save it with np.savez, uncompressed, or np.save: those "
                                          "are memory-mapped)")
        array = archive[key]
    return da.from_array(array, chunks=(chunk_rows or "auto", -1))


def _open_zarr(path: Path, key: str | None, chunk_rows: int | None):
    try:
        import zarr
    except ImportError:
        raise ValueError(f"{path} is a zarr store (a folder or .zarr); reading it needs the zarr "
                         "package: pip install zarr") from None
    import dask.array as da

    try:
        node = zarr.open(str(path), mode="r")
    except Exception as error:  # zarr raises several kinds for a folder that is no store
        raise ValueError(f"{path} is not a readable zarr store ({type(error).__name__}: {error})") from None
    if isinstance(node, zarr.Group):
        names = sorted(node.array_keys())
        if key is None and len(names) != 1:
            raise ValueError(f"the zarr group {path} holds {len(names)} arrays ({', '.join(names) or 'none'}); "
                             "name one with key")
        if key is not None and key not in names:
            raise ValueError(f"the zarr group {path} has no array {key!r}; it holds {', '.join(names)}")
        node = node[key if key is not None else names[0]]
    elif key is not None:
        raise ValueError(f"{path} is one zarr array, not a group; key={key!r} names nothing")
    _check_shape(node.shape, node.dtype, str(path))
    return da.from_zarr(node, chunks=(chunk_rows, -1) if chunk_rows else None)


def _open_parquet(path: Path, key: str | None):
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ValueError(f"{path} is a parquet file; reading it needs pyarrow: pip install pyarrow") from None
    import dask
    import dask.array as da

    if key is not None:
        raise ValueError(f"{path}: key is for .npz and zarr; a parquet file's numeric columns are all read")
    try:
        file = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as error:
        raise ValueError(f"{path} is not a readable parquet file ({error})") from None
    columns = [field.name for field in file.schema_arrow
               if pa.types.is_integer(field.type) or pa.types.is_floating(field.type)]
    if not columns:
        raise ValueError(f"{path} has no integer or floating columns; only those are read")
    groups = [file.metadata.row_group(i).num_rows for i in range(file.num_row_groups)]
    parts = [da.from_delayed(dask.delayed(_read_row_group, pure=True)(str(path), i, columns),
                             shape=(rows, len(columns)), dtype=np.float64)
             for i, rows in enumerate(groups) if rows]
    if not parts:
        raise ValueError(f"{path} has no rows")
    return da.concatenate(parts, axis=0)


def _read_row_group(path: str, index: int, columns: list[str]) -> np.ndarray:
    """One parquet row group's numeric columns as float64 (a missing value becomes NaN)."""
    import pyarrow.parquet as pq

    table = pq.ParquetFile(path).read_row_group(index, columns=columns)
    return np.column_stack([table.column(name).to_numpy(zero_copy_only=False).astype(np.float64)
                            for name in columns])


# -- the tree of sketches ---------------------------------------------------------------------
def _sketch_chunk(block: np.ndarray, kind: str, params: dict, block_info=None) -> np.ndarray:
    """Sketch one row chunk, as a ``map_blocks`` function: the sketch comes back inside a
    1 x 1 object array (a block of a ``dask.array`` is an array). So Dask fuses reading the
    chunk and sketching it into one task: on a cluster the rows stay where they are read
    and only the O(m d) sketch travels."""
    (start, stop), (first, last) = block_info[0]["array-location"]  # the chunk's place in X
    rows = f"rows {start}..{stop - 1}"
    if np.shape(block) != (stop - start, last - first):
        raise ValueError(f"X {rows} (a chunk) holds {' x '.join(map(str, np.shape(block)))} values where X "
                         f"declares {stop - start} rows x {last - first} columns: its source changed or "
                         "gives other rows than it declared; nothing was sketched")
    sketch = KINDS[kind](**params)
    block = np.asarray(block, dtype=np.float64)
    try:
        sketch.extend(block)  # checks every value before any shrink (no LAPACK on NaN or inf)
    except ValueError as error:
        bad = ~np.isfinite(block).all(axis=1)
        if bad.any():
            raise ValueError(f"X {rows} (a chunk): row {start + int(np.flatnonzero(bad)[0])} contains NaN "
                             "or inf; only finite values are allowed") from None
        raise ValueError(f"X {rows} (a chunk): {error}") from None
    cell = np.empty((1, 1), dtype=object)
    cell[0, 0] = sketch
    return cell


def node_sketch(value):
    """The sketch a task of :func:`sketch_graph` computed: a merge node's value as it is, a
    leaf's taken out of its 1 x 1 block (see :func:`_sketch_chunk`); any other value (a
    chunk of rows) as it is.

    >>> import numpy as np
    >>> graph = sketch_graph(np.ones((20, 3)), 2, chunk_rows=10)
    >>> leaf = next(key for key in graph.dask if isinstance(key, tuple) and key[0].startswith("sketch-"))
    >>> from dask.local import get_sync
    >>> value = get_sync(dict(graph.dask), leaf)  # the leaf task's own value
    >>> value.shape, node_sketch(value).n_seen
    ((1, 1), 10)
    """
    if isinstance(value, np.ndarray) and value.dtype == object and value.shape == (1, 1):
        return value[0, 0]
    return value


def _merge_group(group: list) -> FrequentDirections:
    """One inner node of the tree: the merge of up to ``split_every`` sketches (a leaf's
    sketch comes in its 1 x 1 block, see :func:`_sketch_chunk`)."""
    sketches = [node_sketch(node) for node in group]
    return merge(sketches, split_every=max(2, len(sketches)))


def sketch_graph(X, m: int, *, kind: str = "fd", fast: bool = True, split_every: int = 8,
                 alpha0: float = 0.0, chunk_rows: int | None = None, key: str | None = None):
    """The ``dask.delayed`` tree :func:`sketch_array` computes, not computed yet.

    One leaf task ``("sketch-<token>", i, 0)`` per row chunk ``i`` reads the chunk and
    sketches it; then, level by level, ``("merge-<token>", level, j)`` merges the
    consecutive nodes ``j * split_every`` to ``(j + 1) * split_every - 1`` of the level
    below, until one node is left (one chunk: one merge node, a copy). ``.compute()``
    returns the sketch; ``.visualize()`` draws the tree (needs graphviz);
    ``dict(graph.dask)`` lists every task. Arguments as in :func:`sketch_array`, all
    checked here, before anything runs.

    >>> import numpy as np
    >>> graph = sketch_graph(np.ones((40, 3)), 2, split_every=2, chunk_rows=10)
    >>> sorted(key[0].split("-")[0] + str(key[1:]) for key in graph.dask
    ...        if isinstance(key, tuple) and key[0].startswith(("sketch-", "merge-")))
    ['merge(1, 0)', 'merge(1, 1)', 'merge(2, 0)', 'sketch(0, 0)', 'sketch(1, 0)', 'sketch(2, 0)', 'sketch(3, 0)']
    """
    import dask
    from dask.base import tokenize

    kind = check_choice("kind", kind, tuple(KINDS))
    split_every = check_int("split_every", split_every, minimum=2)
    alpha0 = check_float("alpha0", alpha0, minimum=0.0)
    if kind == "fd" and alpha0 != 0.0:
        raise ValueError(f"alpha0 is Robust FD's starting regularizer (kind='rfd'); kind='fd' allows "
                         f"only alpha0=0, got {alpha0}")
    X = open_rows(X, key=key, chunk_rows=chunk_rows)
    m = check_int("m", m, minimum=2)
    if not isinstance(fast, (bool, np.bool_)):
        raise ValueError(f"fast must be True or False, got {fast!r}")
    # the buffer's size, checked arithmetically before one is allocated (m = 10**12 is a
    # ValueError here, not a MemoryError)
    check_matrix_size(f"a sketch of m = {m} (fast = {bool(fast)}) rows x d = {X.shape[1]} columns",
                      2 * m if fast else m, int(X.shape[1]))
    params = {"d": int(X.shape[1]), "m": m, "fast": bool(fast), **({"alpha0": alpha0} if kind == "rfd" else {})}
    KINDS[kind](**params)  # the sketch's own checks, before any task runs

    token = tokenize(X.name, kind, params, split_every)
    leaves = X.map_blocks(_sketch_chunk, kind, params, dtype=object, chunks=((1,) * len(X.chunks[0]), (1,)),
                          name=f"sketch-{token}", meta=np.empty((0, 0), dtype=object))
    nodes = list(leaves.to_delayed().ravel())  # reading and sketching fused: one task per chunk
    merge_group = dask.delayed(_merge_group, pure=True)
    level = 0
    while len(nodes) > 1 or level == 0:  # a single chunk still gets a root that unwraps it
        level += 1
        nodes = [merge_group(nodes[j:j + split_every], dask_key_name=(f"merge-{token}", level, j // split_every))
                 for j in range(0, len(nodes), split_every)]
    return nodes[0]


def sketch_array(X, m: int, *, kind: str = "fd", fast: bool = True, split_every: int = 8,
                 alpha0: float = 0.0, progress: bool = False, chunk_rows: int | None = None,
                 key: str | None = None) -> FrequentDirections:
    """Sketch the rows of ``X`` chunk by chunk on Dask and merge the sketches in a tree.

    ``X``: a ``dask.array`` (2-D, real; chunked by rows, its columns are put in one chunk),
    a numpy array or a path (``.npy``, ``.npz``, zarr, ``.parquet``), opened lazily by
    :func:`open_rows` (``key``, ``chunk_rows``: see there). ``kind``: ``"fd"``
    (:class:`~explorer.sketch.FrequentDirections`) or ``"rfd"``
    (:class:`~explorer.sketch.RobustFrequentDirections`, starting at ``alpha0``); ``m``
    and ``fast`` are the sketch's. ``split_every`` (>= 2): how many sketches one merge
    task takes (the tree's fan-in; :func:`sketch_graph` builds the tree).

    Runs on Dask's current scheduler: the local threaded one by default (``dask.config``
    ``num_workers`` sets its threads; BLAS gets one thread per task while they run), or the
    active ``distributed.Client``. The tree depends only on the chunking and
    ``split_every``, so every scheduler returns the same sketch, bit for bit. ``progress=True`` shows a progress bar (Dask's text bar locally,
    ``distributed.progress`` with a client).

    Returns one sketch of all the rows (``n_seen == X.shape[0]``) with FD's guarantee for
    ``A = X`` (Ghashami et al. 2016; docs/merging.md section 1): ``A^T A - B^T B`` is PSD
    and ``||A^T A - B^T B||_2 <= delta_total <= min_k ||A - A_k||_F^2 / (m - k)``; RFD adds
    its two-sided bound (docs/algorithms.md section 2; docs/merging.md section 3: alpha0
    counts once).

    Raises ``ValueError`` before anything runs for a bad argument or source, and while
    running for a chunk with NaN or inf (naming the rows; that chunk's sketch never calls
    LAPACK on it), or a chunk that is not the rows it declared (a ``from_delayed`` block
    of another shape, a file rewritten since it was opened): a sketch that is returned has
    seen every row, ``n_seen == X.shape[0]``.
    """
    X = open_rows(X, key=key, chunk_rows=chunk_rows)
    graph = sketch_graph(X, m, kind=kind, fast=fast, split_every=split_every, alpha0=alpha0)
    if progress not in (True, False):
        raise ValueError(f"progress must be True or False, got {progress!r}")
    client = _active_client()
    if client is not None:
        future = client.compute(graph)
        if progress:
            from distributed import progress as show_progress

            show_progress(future)
        return _all_rows(future.result(), X.shape[0])
    from dask.diagnostics import ProgressBar
    from threadpoolctl import threadpool_limits

    # Dask's threads already use the cores: a multi-threaded BLAS under each of them only
    # fights for them (10-100x slower on a busy machine, benchmarks/README.md), so one BLAS
    # thread while the tasks run (a distributed worker sets the same in its own process).
    with threadpool_limits(limits=1, user_api="blas"), (ProgressBar() if progress else contextlib.nullcontext()):
        return _all_rows(graph.compute(), X.shape[0])


def _all_rows(sketch: FrequentDirections, rows: int) -> FrequentDirections:
    """``sketch`` if it saw the ``rows`` rows ``X`` declares (``ValueError`` otherwise)."""
    if sketch.n_seen != rows:
        raise ValueError(f"the sketch saw {sketch.n_seen} rows where X declares {rows}: its source gave "
                         "other rows than it declared; no sketch is returned")
    return sketch


def _active_client():
    """The ``distributed.Client`` Dask would use now, or None (threads)."""
    if "distributed" not in sys.modules:  # nobody started a client (and importing it is slow)
        return None
    import dask

    try:
        from distributed import default_client
    except ImportError:  # a module named distributed that is not Dask's
        return None
    if dask.config.get("scheduler", None) not in (None, "dask.distributed", "distributed"):
        return None  # dask.config.set(scheduler="threads") overrides an active client
    try:
        return default_client()
    except ValueError:
        return None


def certified_bounds(sketch: FrequentDirections) -> dict:
    r"""What a merged (or any) FD sketch certifies about the rows ``A`` it summarizes, from
    the sketch alone (O(m^2 d); ``A`` is never read again).

    With ``sigma_i`` the singular values of ``B``, ``Delta = delta_total`` and
    ``||A||_F^2 = frobenius_squared``:

    - ``spectral_error``: ``Delta``, since ``0 <= A^T A - B^T B <= Delta I``; hence every
      ``sigma_i(A)^2`` lies in ``[sigma_i^2, sigma_i^2 + Delta]`` (Weyl);
    - ``tail_bound``: ``min_k (||A||_F^2 - sum_{i<=k} sigma_i^2) / (m - k)`` over ``k < m``.
      The paper's bound ``min_k ||A - A_k||_F^2 / (m - k)`` needs ``A``'s spectrum; since
      ``sigma_i(A)^2 >= sigma_i^2``, ``||A - A_k||_F^2 <= ||A||_F^2 - sum_{i<=k}
      sigma_i^2``, so ``Delta <= (paper's bound) <= tail_bound``: what the sketch can vouch for;
    - ``mass_captured``: ``||B||_F^2 / ||A||_F^2`` (1 when nothing was shrunk).

    >>> import numpy as np
    >>> sk = FrequentDirections(3, 2)
    >>> sk.extend(np.diag([3.0, 2.0, 1.0]))
    >>> {k: round(v, 3) for k, v in certified_bounds(sk).items()}
    {'spectral_error': 5.0, 'tail_bound': 7.0, 'mass_captured': 0.286, 'frobenius_squared': 14.0}
    """
    squared = sketch.singular_values() ** 2
    total = sketch.frobenius_squared
    top = np.concatenate([[0.0], np.cumsum(squared)])[:sketch.m]  # sum of the k largest, k = 0..m-1
    top = np.concatenate([top, np.full(sketch.m - top.size, top[-1])])
    tail = float(np.min((total - top) / (sketch.m - np.arange(sketch.m))))
    return {"spectral_error": sketch.delta_total, "tail_bound": tail,
            "mass_captured": float(squared.sum() / total) if total > 0 else 1.0, "frobenius_squared": total}
