"""Bring your own data: parse a small uploaded CSV, ``.npz``/``.npy`` or LIBSVM file.

:func:`parse_upload` turns the bytes the browser sent into an :class:`UploadedData`
(rows ``X`` and, when the file has them, labels ``y``). Nothing in the file is ever
executed or unpickled: CSV is parsed as text, NumPy archives are opened with
``allow_pickle=False``, LIBSVM goes through scikit-learn's text parser. Every problem
(too large, not numeric, ragged, NaN, a pickled array, ...) raises ``ValueError`` with a
message meant for the student, which the dashboard shows in an alert.

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
import zipfile
from dataclasses import dataclass

import numpy as np

__all__ = ["UploadedData", "parse_upload", "MAX_BYTES", "MAX_ROWS", "MAX_COLUMNS", "FORMATS"]

MAX_BYTES = 5 * 1024 * 1024
"""Largest accepted file (5 MB): a teaching sandbox, not a data platform."""
MAX_ROWS = 20_000
MAX_COLUMNS = 256
"""The sketching page does O(d^3) work per plotted point; d = 256 still plays smoothly."""
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


def parse_upload(filename: str, content: bytes) -> UploadedData:
    """Parse an uploaded file by its extension (see :data:`FORMATS`); ``ValueError`` if unusable."""
    name = str(filename or "upload")
    if content is None or len(content) == 0:
        raise ValueError(f"{name}: the file is empty")
    if len(content) > MAX_BYTES:
        raise ValueError(f"{name}: the file has {len(content) / 2**20:.1f} MB; "
                         f"at most {MAX_BYTES // 2**20} MB is accepted")
    suffix = name[name.rfind("."):].lower() if "." in name else ""
    kind = FORMATS.get(suffix)
    if kind is None:
        raise ValueError(f"{name}: unknown file type {suffix or '(no extension)'}; "
                         f"upload one of {', '.join(sorted(FORMATS))}")
    parser = {"csv": _parse_csv, "npz": _parse_npz, "npy": _parse_npy, "libsvm": _parse_libsvm}[kind]
    X, y = parser(name, content)
    return UploadedData(name, *_check(name, X, y))


def _parse_csv(name: str, content: bytes) -> tuple[np.ndarray, np.ndarray | None]:
    """Comma, semicolon, tab or space separated numbers; an optional header row."""
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError(f"{name}: not a UTF-8 text file (a CSV must be plain text)") from None
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise ValueError(f"{name}: the file holds no rows")
    delimiter = next((c for c in ",;\t" if c in lines[0]), None)
    rows = [[cell.strip() for cell in row] for row in
            (csv.reader(lines, delimiter=delimiter) if delimiter else (line.split() for line in lines))]
    header = None
    if any(not _is_number(cell) for cell in rows[0]):
        header, rows = rows[0], rows[1:]
        if not rows:
            raise ValueError(f"{name}: only a header row, no data")
    width = len(header) if header else len(rows[0])
    values = np.empty((len(rows), width))
    for i, row in enumerate(rows):
        line = i + (2 if header else 1)
        if len(row) != width:
            raise ValueError(f"{name}: line {line} has {len(row)} values, expected {width}")
        for j, cell in enumerate(row):
            if not _is_number(cell):
                what = "is empty" if cell == "" else f"is not a number ({cell!r})"
                raise ValueError(f"{name}: line {line}, column {j + 1} {what}")
            values[i, j] = float(cell)
    label = [j for j, title in enumerate(header or ()) if title.lower() in LABEL_COLUMNS][:1]
    if label and width > 1:
        return np.delete(values, label[0], axis=1), values[:, label[0]]
    return values, None


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _parse_npz(name: str, content: bytes) -> tuple[np.ndarray, np.ndarray | None]:
    """An archive with an array ``X`` (or exactly one array), and optionally ``y``."""
    try:
        archive = np.load(io.BytesIO(content), allow_pickle=False)
    except (ValueError, OSError, zipfile.BadZipFile) as error:
        raise ValueError(f"{name}: not a NumPy .npz archive ({error})") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise ValueError(f"{name}: holds a single array; name the file .npy, or save with np.savez")
    with archive:
        for info in archive.zip.infolist():  # refuse a zip bomb before inflating it
            if info.file_size > 8 * (MAX_ROWS * (MAX_COLUMNS + 1)) + 1024:
                raise ValueError(f"{name}: the array {info.filename} is too large once unpacked")
        keys = archive.files
        key = "X" if "X" in keys else (keys[0] if len(keys) == 1 else None)
        if key is None:
            raise ValueError(f"{name}: holds arrays {keys}; name the data array 'X' (and labels 'y')")
        X = _array(name, archive, key)
        y = _array(name, archive, "y") if "y" in keys and key != "y" else None
    return X, y


def _array(name: str, archive, key: str) -> np.ndarray:
    try:
        return archive[key]
    except ValueError as error:  # object arrays need pickle: refused
        raise ValueError(f"{name}: array {key!r} cannot be read without unpickling "
                         f"(object arrays are refused): {error}") from None


def _parse_npy(name: str, content: bytes) -> tuple[np.ndarray, None]:
    try:
        X = np.load(io.BytesIO(content), allow_pickle=False)
    except (ValueError, OSError) as error:
        raise ValueError(f"{name}: not a NumPy .npy array without pickled objects ({error})") from None
    if not isinstance(X, np.ndarray):
        raise ValueError(f"{name}: is an .npz archive; name the file .npz")
    return X, None


def _parse_libsvm(name: str, content: bytes) -> tuple[np.ndarray, np.ndarray]:
    """``label index:value ...`` lines (scikit-learn's parser: plain text, no pickle)."""
    from sklearn.datasets import load_svmlight_file

    try:
        X, y = load_svmlight_file(io.BytesIO(content))
    except (ValueError, IndexError, UnicodeDecodeError) as error:
        raise ValueError(f"{name}: not a valid LIBSVM file ({error})") from None
    if X.shape[0] * X.shape[1] > MAX_ROWS * MAX_COLUMNS:
        raise ValueError(f"{name}: {X.shape[0]} rows x {X.shape[1]} features is too large")
    return X.toarray(), y


def _check(name: str, X, y) -> tuple[np.ndarray, np.ndarray | None]:
    """Shape, type, size and finiteness of the parsed rows (and labels)."""
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
    if not np.isfinite(X).all():
        row = int(np.flatnonzero(~np.isfinite(X).all(axis=1))[0])
        raise ValueError(f"{name}: row {row + 1} holds NaN or infinity; remove or fill it")
    if not X.any():
        raise ValueError(f"{name}: every value is zero; there is nothing to sketch")
    if y is not None:
        y = np.asarray(y)
        if y.dtype.kind not in "biuf" or y.shape != (n,) or not np.isfinite(y.astype(float)).all():
            raise ValueError(f"{name}: the labels y must be {n} finite numbers, one per row")
        y = y.astype(float)
    return X, y
