"""Bring your own data: parse a small uploaded CSV, ``.npz``/``.npy`` or LIBSVM file.

:func:`parse_upload` turns the bytes the browser sent into an :class:`UploadedData`
(rows ``X`` and, when the file has them, labels ``y``). Nothing in the file is ever
executed or unpickled: CSV and LIBSVM are read as text, line by line; a NumPy array's
header is read and checked (numbers, at most :data:`MAX_ROWS` x :data:`MAX_COLUMNS`)
before its data, which is then taken as raw bytes, never through pickle. The limits are
checked while reading, so an oversized file is refused after its first row too many,
not after parsing all of it (figures: benchmarks/README.md, "Figures behind the code").

Every problem (too large, not numeric, ragged, NaN, a pickled array, values so large that
a sketch's squared norm overflows, ...) raises ``ValueError`` with a message meant for
the student, which the dashboard shows in an alert; no other exception escapes.

>>> data = parse_upload("points.csv", b"x1,x2\\n1,2\\n3,4\\n")
>>> data.X.tolist(), data.y, data.description
([[1.0, 2.0], [3.0, 4.0]], None, 'points.csv: 2 rows x 2 columns')
>>> parse_upload("bad.csv", b"1,2\\n3,oops\\n")
Traceback (most recent call last):
...
ValueError: bad.csv: line 2, column 2 is not a number ('oops')
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ..archive import ArchiveError, ArrayHeader, open_npz, read_npy
from .._validation import squared_norms
from ..sketch import MAX_SQUARED_MASS

__all__ = ["UploadedData", "parse_upload", "check_size", "MAX_BYTES", "MAX_ROWS", "MAX_COLUMNS",
           "MAX_LINE_CHARS", "FORMATS"]

MAX_BYTES = 5 * 1024 * 1024
"""Largest accepted file (5 MB): a teaching sandbox, not a data platform."""
MAX_ROWS = 20_000
MAX_COLUMNS = 256
"""The sketching page does O(d^3) work per plotted point; d = 256 still plays smoothly."""
MAX_LINE_CHARS = 100 * (MAX_COLUMNS + 1)
"""Longest line of a text file: 100 characters for each of at most ``MAX_COLUMNS`` values
and a label (a float needs at most 24), so that no line costs much to split."""
LABEL_COLUMNS = ("y", "label", "target")
"""A CSV column with one of these header names becomes the labels ``y``, not a feature."""
FORMATS = {".csv": "csv", ".txt": "csv", ".tsv": "csv", ".npz": "npz", ".npy": "npy",
           ".svm": "libsvm", ".libsvm": "libsvm", ".svmlight": "libsvm"}

@dataclass(frozen=True)
class UploadedData:
    """Parsed rows ``X`` (n x d, finite floats), optional labels ``y`` (n,), and the file's name."""

    name: str
    X: np.ndarray
    y: np.ndarray | None = None

    @property
    def description(self) -> str:
        n, d = self.X.shape
        labels = "" if self.y is None else " + labels"
        return f"{self.name}: {n} rows x {d} columns{labels}"


def check_size(filename: str, n_bytes: int) -> None:
    """``ValueError`` if a file of ``n_bytes`` bytes is over :data:`MAX_BYTES`.

    The dashboard's file input compares a file's size with the limit in the browser, before
    reading it (a file too large is never sent), and explains a refusal with this message;
    :func:`parse_upload` checks again the bytes it gets.

    >>> check_size("big.csv", 38 * 2**20)
    Traceback (most recent call last):
    ...
    ValueError: big.csv: the file has 38.0 MB; at most 5 MB is accepted
    """
    if n_bytes > MAX_BYTES:
        raise ValueError(f"{filename or 'upload'}: the file has {n_bytes / 2**20:.1f} MB; "
                         f"at most {MAX_BYTES // 2**20} MB is accepted")


def parse_upload(filename: str, content: bytes) -> UploadedData:
    """Parse an uploaded file by its extension (see :data:`FORMATS`); ``ValueError`` if unusable."""
    name = str(filename or "upload")
    if content is None or len(content) == 0:
        raise ValueError(f"{name}: the file is empty")
    check_size(name, len(content))
    suffix = name[name.rfind("."):].lower() if "." in name else ""
    kind = FORMATS.get(suffix)
    if kind is None:
        raise ValueError(f"{name}: unknown file type {suffix or '(no extension)'}; "
                         f"upload one of {', '.join(sorted(FORMATS))}")
    parser = {"csv": _parse_csv, "npz": _parse_npz, "npy": _parse_npy, "libsvm": _parse_libsvm}[kind]
    X, y = parser(name, bytes(content))
    return UploadedData(name, *_check(name, X, y))


# -- text: CSV and LIBSVM ------------------------------------------------------------------

def _lines(name: str, content: bytes) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of each non-blank line, decoded and read lazily (a caller
    that stops early reads no further, and a long line is refused after
    :data:`MAX_LINE_CHARS` characters, never read whole)."""
    stream = io.TextIOWrapper(io.BytesIO(content), encoding="utf-8-sig", newline=None)
    number = 0
    while True:
        try:
            line = stream.readline(MAX_LINE_CHARS + 1)
        except UnicodeDecodeError:
            raise ValueError(f"{name}: not a UTF-8 text file (a CSV must be plain text)") from None
        if not line:
            return
        number += 1
        if len(line) > MAX_LINE_CHARS:
            raise ValueError(f"{name}: line {number} has more than {MAX_LINE_CHARS} characters, "
                             f"too many for {MAX_COLUMNS} values and a label")
        if line.strip():
            yield number, line


def _parse_csv(name: str, content: bytes) -> tuple[np.ndarray, np.ndarray | None]:
    """Comma, semicolon, tab or space separated numbers; an optional header row.

    Rows are converted as they are read, into an array sized from the first row, and
    reading stops at the first row over :data:`MAX_ROWS` or the first too wide.
    """
    header, values, width, delimiter = None, None, 0, None
    count = 0
    for number, line in _lines(name, content):
        if delimiter is None:
            delimiter = next((c for c in ",;\t" if c in line), " ")
        cells = _cells(name, number, line, delimiter)
        if values is None:  # the first row: a header, or data
            width = len(cells)
            if width > MAX_COLUMNS + 1:
                raise ValueError(f"{name}: line {number} has {width} values, which is too "
                                 f"many; at most {MAX_COLUMNS} columns (and a label column)")
            values = np.empty((_rows_at_most(content), width))
            if any(not _is_number(cell) for cell in cells):
                header = cells
                continue
        if len(cells) != width:
            raise ValueError(f"{name}: line {number} has {len(cells)} values, expected {width}")
        if count == MAX_ROWS:
            raise ValueError(f"{name}: more than {MAX_ROWS} rows is too large; at most "
                             f"{MAX_ROWS} rows (and {MAX_COLUMNS} columns) are accepted")
        values[count] = [_number(name, number, j, cell) for j, cell in enumerate(cells)]
        count += 1
    if values is None:
        raise ValueError(f"{name}: the file holds no rows")
    if count == 0:
        raise ValueError(f"{name}: only a header row, no data")
    values = values[:count]
    label = [j for j, title in enumerate(header or ()) if title.lower() in LABEL_COLUMNS][:1]
    if label and width > 1:
        return np.delete(values, label[0], axis=1), values[:, label[0]]
    return values, None


def _rows_at_most(content: bytes) -> int:
    """Enough rows for every line of ``content`` (or :data:`MAX_ROWS`, the most accepted)."""
    return min(MAX_ROWS, content.count(b"\n") + content.count(b"\r") + 1)


def _cells(name: str, number: int, line: str, delimiter: str) -> list[str]:
    if delimiter == " ":
        return line.split()
    try:
        cells = next(csv.reader([line], delimiter=delimiter))
    except csv.Error as error:
        raise ValueError(f"{name}: line {number} is not valid CSV ({error})") from None
    return [cell.strip() for cell in cells]


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _number(name: str, number: int, column: int, cell: str) -> float:
    try:
        return float(cell)
    except ValueError:
        what = "is empty" if cell == "" else f"is not a number ({cell[:40]!r})"
        raise ValueError(f"{name}: line {number}, column {column + 1} {what}") from None


def _parse_libsvm(name: str, content: bytes) -> tuple[np.ndarray, np.ndarray]:
    """``label [qid:N] index:value ... [# comment]`` lines, the SVMlight/LIBSVM format.

    Indices increase along a line, each at most :data:`MAX_COLUMNS`; they count from 1,
    or from 0 when some index is 0 (scikit-learn's ``load_svmlight_file`` with
    ``zero_based="auto"``). Absent features are 0. Parsed here, line by line, so that an
    index too large or a row too many stops the reading with a message.
    """
    labels: list[float] = []
    X = np.zeros((_rows_at_most(content), MAX_COLUMNS + 1))  # trimmed to the indices used
    used = set()
    for number, line in _lines(name, content):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        if len(labels) == MAX_ROWS:
            raise ValueError(f"{name}: more than {MAX_ROWS} rows is too large; at most "
                             f"{MAX_ROWS} rows (and {MAX_COLUMNS} features) are accepted")
        label = fields[0]
        if ":" in label:
            raise ValueError(f"{name}: line {number} starts with {label[:40]!r}; a LIBSVM line "
                             f"starts with its label, then index:value pairs")
        row = len(labels)
        labels.append(_number(name, number, 0, label))
        previous = -1
        for column, pair in enumerate(fields[1:], 1):
            key, colon, value = pair.partition(":")
            if key == "qid" and colon:
                continue
            if not (colon and key.isascii() and key.isdigit()):
                raise ValueError(f"{name}: line {number}: {pair[:40]!r} is not index:value "
                                 f"(not a valid LIBSVM file)")
            if len(key) > 6 or int(key) > MAX_COLUMNS:
                raise ValueError(f"{name}: line {number}: feature index {key[:20]} is too large; "
                                 f"at most {MAX_COLUMNS} features are accepted")
            index = int(key)
            if index <= previous:
                raise ValueError(f"{name}: line {number}: feature indices must increase "
                                 f"({index} after {previous}; not a valid LIBSVM file)")
            previous = index
            used.add(index)
            X[row, index] = _number(name, number, column, value)
    if not labels:
        raise ValueError(f"{name}: the file holds no rows")
    first = 0 if 0 in used else 1
    return X[:len(labels), first:max(used, default=first) + 1].copy(), np.array(labels)


# -- NumPy: .npy and .npz -----------------------------------------------------------------

def _parse_npy(name: str, content: bytes) -> tuple[np.ndarray, None]:
    if content.startswith(b"PK\x03\x04"):
        raise ValueError(f"{name}: is an .npz archive; name the file .npz")
    try:
        return read_npy(content, name, accept=_accept(name, "the file")), None
    except ArchiveError as error:
        raise ValueError(_npy_message(error, "the file")) from None


def _parse_npz(name: str, content: bytes) -> tuple[np.ndarray, np.ndarray | None]:
    """An archive (``np.savez``) with an array ``X`` (or exactly one array), optionally ``y``,
    read by :func:`explorer.archive.open_npz` (members checked, headers within the limits
    before any data is read or inflated)."""
    try:
        with open_npz(content, name, limit=_MAX_DATA_BYTES, accept=_accept_member(name)) as archive:
            keys = sorted(archive)
            if not keys:
                raise ValueError(f"{name}: the archive holds no .npy arrays; save one with "
                                 f"np.savez(file, X=rows, y=labels)")
            key = "X" if "X" in archive else (keys[0] if len(keys) == 1 else None)
            if key is None:
                raise ValueError(f"{name}: holds arrays {keys}; name the data array 'X' "
                                 f"(and labels 'y')")
            X = archive[key]
            y = archive["y"] if "y" in archive and key != "y" else None
    except ArchiveError as error:
        if "Python objects" in error.reason or "is not a NumPy .npy array" in error.reason:
            raise ValueError(_npy_message(error, error.reason.split(" is not", 1)[0].split(" holds", 1)[0])) from None
        if error.reason.startswith("its arrays declare"):
            raise ValueError(str(error)) from None
        raise ValueError(f"{name}: not a NumPy .npz archive (a zip of .npy arrays, as "
                         f"np.savez writes), or a damaged one ({error.reason})") from None
    return X, y


_MAX_DATA_BYTES = 2 * MAX_ROWS * (MAX_COLUMNS + 1) * 8
"""The most array data an archive may declare: X and y of the largest accepted shape."""


def _accept_member(name: str):
    return lambda key, header: _accept(name, f"array {key!r}")(header)


def _accept(name: str, what: str):
    """The upload's own checks of a declared array, before any of its data is read: a
    number type, 1 or 2 dimensions, at most :data:`MAX_ROWS` x :data:`MAX_COLUMNS`."""
    def accept(header: ArrayHeader) -> None:
        shape, dtype = header.shape, header.dtype
        if dtype.kind not in "biuf":
            raise ValueError(f"{name}: the data must be numbers, got dtype {dtype} in {what}")
        if len(shape) not in (1, 2):
            raise ValueError(f"{name}: {what} has shape {shape}; need a table (2-D) or a column (1-D)")
        rows, columns = (*shape, 1)[:2]
        if rows > MAX_ROWS or columns > MAX_COLUMNS:
            raise ValueError(f"{name}: {what} has {rows} rows x {columns} columns, which is too "
                             f"large; at most {MAX_ROWS} rows and {MAX_COLUMNS} columns")
    return accept


def _npy_message(error: ArchiveError, what: str) -> str:
    if "Python objects" in error.reason:
        return (f"{error.name}: {what} holds Python objects, which would need unpickling "
                f"(object arrays are refused); save an array of numbers")
    if "is not a NumPy .npy array" in error.reason:
        return f"{error.name}: {what} is not a NumPy .npy array (as np.save writes) or its header is damaged"
    return str(error)


# -- every format --------------------------------------------------------------------------

def _check(name: str, X, y) -> tuple[np.ndarray, np.ndarray | None]:
    """Shape, type, size, finiteness and scale of the parsed rows (and labels), as floats.

    The scale: the sketches refuse a row that takes ``||A||_F^2`` past
    :data:`explorer.sketch.MAX_SQUARED_MASS` (their shrink would overflow), so data whose
    squared values sum past it is refused here, before anything plays.
    """
    X = np.asarray(X)
    if X.dtype.kind not in "biuf":
        raise ValueError(f"{name}: the data must be numbers, got dtype {X.dtype}")
    if X.ndim == 1:
        X = X[:, None]
    if X.ndim != 2 or X.shape[0] < 2 or X.shape[1] < 1:
        raise ValueError(f"{name}: need a table of at least 2 rows, got shape {X.shape}")
    n, d = X.shape
    if n > MAX_ROWS or d > MAX_COLUMNS:
        raise ValueError(f"{name}: {n} rows x {d} columns is too large; "
                         f"at most {MAX_ROWS} rows and {MAX_COLUMNS} columns")
    X = X.astype(float)
    finite = np.isfinite(X).all(axis=1)
    if not finite.all():
        row = int(np.flatnonzero(~finite)[0])
        raise ValueError(f"{name}: row {row + 1} holds NaN or infinity; remove or fill it")
    if not X.any():
        raise ValueError(f"{name}: every value is zero; there is nothing to sketch")
    with np.errstate(over="ignore"):
        mass = np.cumsum(squared_norms(X))
    if not mass[-1] <= MAX_SQUARED_MASS:
        row = int(np.flatnonzero(~(mass <= MAX_SQUARED_MASS))[0])
        raise ValueError(
            f"{name}: the values are too large (up to {np.abs(X).max():.3g}): by row {row + 1} "
            f"the sum of their squares passes {MAX_SQUARED_MASS:.0e}, where the sketches "
            f"overflow. Values up to about 1e150 work; rescale the data (e.g. divide it by "
            f"its largest value) and upload it again")
    if y is not None:
        y = np.asarray(y)
        if y.dtype.kind not in "biuf" or y.shape != (n,) or not np.isfinite(y.astype(float)).all():
            raise ValueError(f"{name}: the labels y must be {n} finite numbers, one per row")
        y = y.astype(float)
    return X, y
