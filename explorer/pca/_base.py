"""Pieces shared by the learners of :mod:`explorer.pca`: the round protocol (``learn``,
``step`` and ``with_params``), seeded randomness that can be saved, the symmetric
eigensolver, the density matrix kept as eigenvectors plus log-eigenvalues, and the checks
every learner of the family makes on its settings, its inputs and its state files.

Extreme but finite input (docs/algorithms.md section 5). Every learner of the family
multiplies weights by :math:`e^{-\\eta\\,\\ell}` for a loss :math:`\\ell` of the round
(:math:`\\|x\\|^2` for a row, :math:`\\|C\\|_F` for a covariance matrix, the largest
:math:`|\\ell_i|` for a vector of expert losses). The weights are kept as logarithms, so no
factor under- or overflows, but two limits remain, and a round past either is refused
with a ``ValueError`` before anything changes:

- :data:`MAX_LOSS`: a loss above 1e300 would make the round's loss, expected loss or
  the matrices built from it overflow;
- :data:`MAX_STEP`: ``eta`` times the loss above 1e6. The density-matrix learners
  diagonalize :math:`\\ln W - \\eta C`; the eigensolver's rounding is about
  :math:`10^{-16}\\,\\|\\ln W - \\eta C\\|`, so a step of 1e6 already costs the other
  log-weights ten digits, and one of 1e16 leaves none (the weights then come out in a
  random order: measured on a 5 x 5 example). A weight multiplied by
  :math:`e^{-10^6}` is zero many times over anyway (:math:`e^{-745}` underflows), so the
  limit only refuses data that need rescaling, e.g. rows of norm above 1000 at eta = 1
  (the paper's rows have norm at most 1). The same limit for the learners without an
  eigensolver keeps every log-weight finite for any number of rounds.

Tiny input is handled exactly: a row of norm 1e-300 has loss 0 in double precision and
changes the weights by a factor :math:`e^{-10^{-600}} = 1`.

Divergence: the weights live in logs and the steps are bounded, so the numbers cannot run
away; what can fail is LAPACK's eigensolver. That failure (or a NaN in its result) raises
:class:`~explorer.errors.Diverged`, naming the round, with nothing changed.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import scipy.linalg
from scipy.linalg.blas import ddot as _ddot

from .._validation import as_matrix, as_row, as_rows, check_float, check_int
from ..errors import Diverged
from ..hooks import StepRecord
from ..learner import OnlineLearner, RoundRefused, Rounds
from ..params import Tunable
from ..state import StateReader, copy_array, generator_json

__all__ = [
    "MAX_LOSS", "MAX_STEP", "MAX_N",
    "check_dimension", "check_subset", "check_learning_rates", "check_seed", "squared_norm",
    "check_loss", "as_loss_row", "as_loss_matrix", "as_stream", "read_learning_rates", "stored",
    "read_last", "read_log_weights", "orthonormality_error", "read_orthonormal", "eigh",
    "refused_in_round", "log_normalize", "RoundLearner", "RandomizedLogWeights",
    "DensityMatrixLearner",
]

#: The largest loss a round may have (||x||^2, ||C||_F or max |loss_i|); also the largest
#: trace of Follow the Leader's covariance and the largest total squared norm of a stream.
MAX_LOSS = 1e300
#: The largest ``eta`` times the round's loss (see the module docstring).
MAX_STEP = 1e6
#: The largest dimension n: the learners keep n x n matrices (128 MB at n = 4096) and
#: diagonalize one per round, or decompose weights in O(n^2 log n).
MAX_N = 4096


# -- settings -------------------------------------------------------------------------------

def check_dimension(n, minimum: int) -> int:
    """n in [minimum, MAX_N]."""
    n = check_int("n", n, minimum=minimum)
    if n > MAX_N:
        raise ValueError(f"n must be an integer in [{minimum}, {MAX_N}] (the learner keeps n x n "
                         f"matrices or decomposes n weights every round), got {n}")
    return n


def check_subset(n, k) -> tuple[int, int]:
    """n in [2, MAX_N] and k in [1, n - 1] (k kept directions or left-out experts)."""
    n = check_dimension(n, 2)
    k = check_int("k", k, minimum=1)
    if k >= n:
        raise ValueError(f"k must be an integer in [1, n - 1] = [1, {n - 1}], got {k}")
    return n, k


def check_learning_rates(eta, alpha) -> tuple[float, float]:
    """eta > 0 (eta = 0 would never learn; AdaGrad and S-FTRL refuse it too) and alpha in [0, 1]."""
    eta = check_float("eta", eta, minimum=0.0, strict_minimum=True)
    alpha = check_float("alpha", alpha, minimum=0.0, maximum=1.0)
    return eta, alpha


def check_seed(seed) -> int | None:
    """None (fresh entropy) or an integer >= 0."""
    return None if seed is None else check_int("seed", seed, minimum=0)


# -- inputs ---------------------------------------------------------------------------------

def squared_norm(x: np.ndarray) -> float:
    """``x @ x`` of a float vector, inf when it overflows: BLAS's ddot directly, which
    raises no warning (the caller compares the result with MAX_LOSS) and costs a tenth of
    ``np.errstate``."""
    return float(_ddot(x, x))


def check_loss(size: float, eta: float | None, what: str) -> None:
    """Refuse a round whose loss ``size`` passes MAX_LOSS, or whose step ``eta * size``
    passes MAX_STEP (``eta=None``: no step, e.g. ``expected_loss``). Nothing has changed."""
    if not size <= MAX_LOSS:
        raise ValueError(f"{what} = {size:.3g} is too large: at most {MAX_LOSS:.0e}, beyond which "
                         f"the losses overflow; rescale the data (the regret bounds take losses of at "
                         f"most 1); nothing was updated")
    if eta is not None and not eta * size <= MAX_STEP:
        raise ValueError(f"eta * {what} = {eta:g} * {size:.3g} = {eta * size:.3g} is too large a step: "
                         f"at most {MAX_STEP:.0e} (beyond it the weights are decided by rounding, "
                         f"not by the data); rescale the data (the regret bounds take losses of at "
                         f"most 1) or lower eta; nothing was updated")


def as_loss_row(x, n: int, eta: float | None, name: str = "x") -> np.ndarray:
    """A finite row of length n whose loss ``||x||^2`` passes :func:`check_loss`."""
    x = as_row(x, n, name)
    check_loss(squared_norm(x), eta, f"||{name}||^2")
    return x


def as_loss_matrix(C, n: int, eta: float | None = None,
                   name: str = "C") -> tuple[np.ndarray, np.ndarray | None]:
    """A symmetric finite n x n loss matrix and, when ``C`` was given as a vector x
    standing for ``x x^T``, that vector (else None).

    Its size is ``||C||_F`` (``||x||^2`` for a vector), checked by :func:`check_loss`
    before any product is formed, so nothing overflows. Symmetric means
    ``|C - C^T| <= 1e-10 max |C|`` (relative: a tiny matrix is no more forgiven than a
    large one). Definiteness is not checked: the update is defined for any symmetric C
    and a check would cost a second eigendecomposition per round; the regret bounds
    (Theorems 4 to 6) assume :math:`0 \\preceq C \\preceq I`.
    """
    if np.ndim(C) == 1:
        x = as_loss_row(C, n, eta, name)
        return np.outer(x, x), x
    C = as_matrix(C, name)
    if C.shape != (n, n):
        raise ValueError(f"{name} must be an n x n matrix with n = {n} (or a vector x of length n "
                         f"meaning x x^T), got shape {C.shape}")
    largest = float(np.abs(C).max())
    check_loss(largest, None, f"max |{name}_ij|")
    if largest <= 1e100:  # no square overflows: sum them directly
        size = math.sqrt(squared_norm(C.ravel()))
    else:
        size = largest * math.sqrt(squared_norm((C / largest).ravel()))
    check_loss(size, eta, f"||{name}||_F")
    asymmetry = float(np.abs(C - C.T).max())
    if asymmetry > 1e-10 * largest:
        raise ValueError(f"{name} must be symmetric (a covariance matrix), got max |C - C^T| = "
                         f"{asymmetry:.3g} against max |C| = {largest:.3g}")
    return (C + C.T) / 2.0, None


def as_stream(X, name: str = "X") -> np.ndarray:
    """A non-empty finite float matrix (T rows of length n) of total squared norm at most
    MAX_LOSS (its covariance ``X^T X`` is then finite)."""
    try:
        shape = np.shape(X) if not isinstance(X, (str, bytes)) and X is not None else ()
    except ValueError:  # a ragged list
        shape = ()
    if len(shape) != 2 or 0 in shape:
        raise ValueError(f"{name} must be a non-empty matrix (T rows of length n), got "
                         f"{f'shape {shape}' if shape else repr(X)[:80]}")
    X = as_rows(X, shape[1], name)
    largest = float(np.abs(X).max())
    if largest > 0:
        total = (largest * largest * float(np.sum((X / largest) ** 2))
                 if largest <= math.sqrt(MAX_LOSS) else np.inf)
        if not total <= MAX_LOSS:
            raise ValueError(f"{name} is too large: its total squared norm sum ||x_t||^2 = "
                             f"{total:.3g} exceeds {MAX_LOSS:.0e}; rescale it")
    return X


def read_learning_rates(reader: StateReader) -> dict:
    """``{"eta": ..., "alpha": ...}`` from a state, in the ranges the constructors allow."""
    return {"eta": reader.number("eta", minimum=0.0, strict_minimum=True),
            "alpha": reader.number("alpha", minimum=0.0, maximum=1.0)}


# -- persisted numbers ------------------------------------------------------------------------

def stored(value: float | None) -> float:
    """A ``last_*`` number as a state stores it: 0.0 before the first round (no NaN in a
    state; :func:`read_last` gives None back for t = 0)."""
    return 0.0 if value is None else value


def read_last(reader: StateReader, key: str, t: int, minimum: float = -np.inf) -> float | None:
    """A ``last_*`` number: None before the first round (stored as 0.0; NaN in states
    written before the checks), a finite number >= minimum after it."""
    if t == 0:
        value = reader.raw(key)
        if not (isinstance(value, float) and (value == 0.0 or np.isnan(value))):
            raise reader.refuse(key, "0.0 before the first round (t = 0)", value)
        return None
    return reader.number(key, minimum=minimum)


def read_log_weights(reader: StateReader, key: str, n: int, t: int, d: int = 1) -> np.ndarray:
    """Log-weights of a point of the capped simplex :math:`B_d^n`, as t rounds leave them.

    Checked: shape (n,), finite, summing to 1 and at most 1/d (within 1e-9), and none
    below :math:`-\\ln n - t\\,(2\\,\\mathrm{MAX\\_STEP} + 1)`: a round lowers a
    log-weight by at most twice its step (Weyl's inequality for the eigenvalues of
    :math:`\\ln W - \\eta C`, once more for the normalization) plus ln 2 (fixed share's
    factor :math:`1 - \\alpha`), so a state below it was not written by a run.
    """
    log_w = reader.array(key, (n,))
    top = float(log_w.max())
    if top > -math.log(d) + 1e-9:
        raise reader.refuse(key, f"the logs of weights at most 1/{d} (capped)", f"largest e^{top:.6g}")
    floor = -math.log(n) - t * (2 * MAX_STEP + 1) - 1e-9
    if float(log_w.min()) < floor:
        raise reader.refuse(key, f">= {floor:.6g} after t = {t} rounds (each lowers a log-weight by "
                            f"at most 2 * {MAX_STEP:.0e} + 1)", float(log_w.min()))
    total = top + math.log(float(np.sum(np.exp(log_w - top))))
    if abs(total) > 1e-9:
        raise reader.refuse(key, "the logs of weights summing to 1", f"weights summing to e^{total:.3g}")
    return log_w


def orthonormality_error(V: np.ndarray) -> float:
    """``max |V^T V - I|`` (inf when an entry exceeds 1, which no orthonormal column has:
    checked first, so the product cannot overflow)."""
    if np.abs(V).max(initial=0.0) > 1.0 + 1e-8:
        return float("inf")
    return float(np.abs(V.T @ V - np.eye(V.shape[1])).max(initial=0.0))


def read_orthonormal(reader: StateReader, key: str, shape: tuple[int, int]) -> np.ndarray:
    """A matrix with orthonormal columns (``|V^T V - I| <= 1e-8``)."""
    V = reader.array(key, shape)
    error = orthonormality_error(V)
    if error > 1e-8:
        raise reader.refuse(key, "a matrix with orthonormal columns", f"max |V^T V - I| = {error:.3g}")
    return V


# -- numerics -----------------------------------------------------------------------------------

def eigh(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (ascending) and orthonormal eigenvectors of the symmetric matrix ``M``.

    LAPACK's divide and conquer (evd: on these matrices, with many equal eigenvalues, faster
    and more accurately orthonormal than evr) first; on its rare failure, the slower but
    sturdier QR algorithm (ev). ``M`` must be finite (callers check); a failure of both, or
    a non-finite result, is :class:`~explorer.errors.Diverged` (a ``ValueError``).
    """
    M = (M + M.T) / 2.0
    try:
        values, vectors = scipy.linalg.eigh(M, check_finite=False, driver="evd")
    except (np.linalg.LinAlgError, ValueError):
        try:
            values, vectors = scipy.linalg.eigh(M, check_finite=False, driver="ev")
        except (np.linalg.LinAlgError, ValueError) as error:
            raise Diverged(f"the symmetric eigensolver failed ({error}); nothing was updated") from None
    if not (np.isfinite(values).all() and np.isfinite(vectors).all()):
        raise Diverged("the symmetric eigensolver returned NaN or inf; nothing was updated")
    return values, vectors


def refused_in_round(error: Diverged) -> RoundRefused:
    """``error`` (a failed eigensolver) as the refusal of the round it happened in, which
    :meth:`RoundLearner._refused` raises as a :class:`~explorer.errors.Diverged` naming the
    learner and the round."""
    return RoundRefused(str(error))


def log_normalize(log_v: np.ndarray) -> np.ndarray:
    """``log_v - ln sum exp(log_v)``: log-weights of the normalized vector, without overflow."""
    top = log_v.max()
    return log_v - (top + np.log(np.sum(np.exp(log_v - top))))


class RoundLearner(OnlineLearner, Tunable):
    """The round protocol of every learner of the family (docs/architecture.md).

    A subclass writes the algorithm once, as ``_round(x, record) -> (loss, nan, step, ...)``
    (then its :attr:`ROUND_OUTPUTS`):
    it checks its input, computes the whole round, commits it, emits its hook events when a
    hook listens, and returns the loss and the round's :class:`~explorer.hooks.StepRecord`,
    built only when ``record`` is true or a hook listens (the hooks receive that very
    record), else None; a failed eigensolver is a :class:`~explorer.learner.RoundRefused`
    (:func:`refused_in_round`). On top of it (:class:`~explorer.learner.OnlineLearner`):

    - ``learn(x) -> loss``, ``learn_many(X) -> losses`` (``y`` must be None: the family
      learns from ``x`` alone; no scalar prediction),
    - ``step(x) -> StepRecord``, with ``step(x).loss == learn(x)`` for the same state,
    - ``with_params(eta=..., alpha=...)`` (:class:`~explorer.params.Tunable`): a new learner
      continuing from this one's state, the hyper-parameters in ``HOT`` changed. The saved
      state keeps eta and alpha under their own names, so the default
      ``_continue_state`` applies.

    ``_INPUT`` names what a round takes, for the refusal of a label.
    """

    _INPUT: ClassVar[str] = "one row x"

    PREDICTS = False  # a round's decision is a subspace, not a number

    def _check_round(self, x, y) -> tuple:
        self._no_label(y)
        return (x,)  # the round checks its input itself (as_loss_row, _as_losses, ...)

    def _check_rounds(self, X, y) -> Rounds:
        self._no_label(y)
        try:
            return Rounds((x,) for x in X)
        except TypeError:
            raise ValueError(f"X must be a sequence of rounds ({self._INPUT} each), got "
                             f"{type(X).__name__}") from None

    def _no_label(self, y) -> None:
        if y is not None:
            raise ValueError(f"{type(self).__name__} learns from {self._INPUT} per round and "
                             f"takes no label: y must be None")

    def _refused(self, refusal: RoundRefused, row: int | None) -> Diverged:
        t = self.t + 1
        where = "" if row is None else f" (X row {row}; the call is undone)"
        return Diverged(f"{type(self).__name__}, round {t}{where}: {refusal}", row=row or 0, t=t)

    def _round(self, x, record: bool) -> tuple[float, float, StepRecord | None]:
        raise NotImplementedError


class RandomizedLogWeights(RoundLearner):
    r"""What the randomized learners of the family share (Yuan & Lamperski, Algorithms 1,
    4 and 5): n weights on the capped simplex :math:`B_d^n` kept as logarithms ``ln w``
    (:math:`w_1` uniform), a step size eta > 0, a fixed-share rate alpha in [0, 1], a
    seeded generator for the sampled decision, the round counter t and the last round's
    sampled and expected losses; and their persistence. A round returns ``(loss, nan,
    record, expected_loss)``, so ``progressive(X)["expected_loss"]`` keeps every round's
    expected loss without building records.

    ``eta`` and ``alpha`` may change between rounds, through ``with_params`` (``HOT``; the
    dashboard's sliders do), ``n`` and ``k`` may not. :meth:`load_state_dict` therefore
    loads eta, alpha and the seed with the weights and refuses a state of another n or k.

    A learner with ``alpha = 0`` (static: Warmuth & Kuzmin's algorithm) is no other kind of
    object: ``with_params(alpha=...)`` switches fixed share on from its current weights, and
    ``with_params(alpha=0.0)`` switches it off.
    """

    HOT = ("eta", "alpha")
    ROUND_OUTPUTS = {"expected_loss": 3}  # after (loss, nan, record) in _round's result

    def __init__(self, n: int, *, eta: float, alpha: float, seed: int | None, minimum_n: int):
        super().__init__()
        self.n = check_dimension(n, minimum_n)
        self.eta, self.alpha = check_learning_rates(eta, alpha)
        self.seed = check_seed(seed)
        self._rng = np.random.default_rng(self.seed)
        self._log_w = np.full(self.n, -np.log(self.n))
        self.t = 0
        self.last_loss: float | None = None
        self.last_expected_loss: float | None = None

    #: The structural settings, first arguments of the constructor: a state must share them
    #: with the object it is loaded into in place.
    _setting_keys: tuple[str, ...] = ("n",)

    def _cap_size(self) -> int:
        """d of the capped simplex the weights live in (1: no cap)."""
        return 1

    def _settings(self) -> dict:
        return {key: getattr(self, key) for key in self._setting_keys}

    def _smallest_loss(self) -> float:
        """The smallest loss a round can report (0 for a compression loss)."""
        return -np.inf

    # -- persistence ---------------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Plain arrays and scalars; ``from_state_dict`` continues exactly from here."""
        return {"kind": type(self).__name__, **self._settings(), "eta": self.eta,
                "alpha": self.alpha, "seed": -1 if self.seed is None else self.seed,
                "t": self.t, "log_w": self._log_w.copy(), "rng": generator_json(self._rng),
                "last_loss": stored(self.last_loss),
                "last_expected_loss": stored(self.last_expected_loss), **self._extra_state()}

    def _extra_state(self) -> dict:
        return {}

    @classmethod
    def from_state_dict(cls, state: dict):
        reader = StateReader(state, cls)
        settings = [reader.count(key, minimum=1) for key in cls._setting_keys]
        learner = cls(*settings, **read_learning_rates(reader), seed=reader.seed())
        learner.load_state_dict(state)
        return learner

    def load_state_dict(self, state: dict) -> None:
        """Become the learner ``state`` describes, in place (same n and k; eta, alpha and the
        seed are loaded). Everything is checked before anything is stored: ``ln w`` the logs
        of a point of the capped simplex that t rounds could reach
        (:func:`read_log_weights`), a valid generator state, t >= 0, the losses finite (0
        before the first round), and what a subclass keeps (:meth:`_read_extra`). A refusal
        is a ``ValueError`` naming the key, and the learner stays as it was."""
        reader = StateReader(state, type(self))
        for key, value in self._settings().items():
            reader.same(key, value)
        rates, seed, t = read_learning_rates(reader), reader.seed(), reader.count("t")
        log_w = read_log_weights(reader, "log_w", self.n, t, self._cap_size())
        rng = reader.generator_state()
        last_loss = read_last(reader, "last_loss", t, self._smallest_loss())
        last_expected_loss = read_last(reader, "last_expected_loss", t, self._smallest_loss())
        extra = self._read_extra(reader)
        self.eta, self.alpha = rates["eta"], rates["alpha"]
        self.seed, self.t, self._log_w = seed, t, log_w
        self._rng.bit_generator.state = rng
        self.last_loss, self.last_expected_loss = last_loss, last_expected_loss
        for name, value in extra.items():
            setattr(self, name, value)

    def _read_extra(self, reader: StateReader) -> dict:
        """A subclass's own arrays, checked, as ``{attribute: value}`` (stored after the rest)."""
        return {}


class DensityMatrixLearner(RandomizedLogWeights):
    r"""A density matrix :math:`W = D\,\mathrm{diag}(w)\,D^T` kept as ``D`` and ``ln w``.

    The matrix exponentiated-gradient step of Warmuth & Kuzmin,

    .. math:: V = \exp(\ln W - \eta G) / \operatorname{tr}(\cdot),

    is computed as ``eigh(D diag(ln w) D^T - eta G)`` followed by a softmax of the
    eigenvalues: ``ln W`` comes from the stored logs, never from a matrix logarithm of
    ``W`` (whose tiny eigenvalues, e^-80 and below without fixed share, an
    eigensolver cannot resolve; docs/algorithms.md section 5). A state's ``D`` must be
    orthonormal (to 1e-8).
    """

    def __init__(self, n: int, *, eta: float, alpha: float, seed: int | None, minimum_n: int = 1):
        super().__init__(n, eta=eta, alpha=alpha, seed=seed, minimum_n=minimum_n)
        self._vectors = np.eye(self.n)

    # -- what the learner holds ------------------------------------------------------------
    @property
    def eigenvalues(self) -> np.ndarray:
        """The eigenvalues ``w`` of the current density matrix (a probability vector)."""
        return np.exp(self._log_w)

    @property
    def log_eigenvalues(self) -> np.ndarray:
        """``ln w``, exact even where ``w`` underflows to 0."""
        return self._log_w.copy()

    @property
    def eigenvectors(self) -> np.ndarray:
        """The columns of ``D`` (n x n, orthonormal), in the order of :attr:`eigenvalues`."""
        return self._vectors.copy()

    @property
    def W(self) -> np.ndarray:
        """The current density matrix (n x n, for inspection)."""
        return (self._vectors * self.eigenvalues) @ self._vectors.T

    def _exponentiated_step(self, G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Eigenvectors and log-eigenvalues of ``exp(ln W - eta G) / tr``; if the eigensolver
        fails, :class:`~explorer.errors.Diverged` naming the round (nothing changed). ``G``
        passed :func:`check_loss`."""
        M = (self._vectors * self._log_w) @ self._vectors.T - self.eta * G
        try:
            mu, U = eigh(M)
        except Diverged as error:
            raise refused_in_round(error) from None
        return U, log_normalize(mu)

    def _spectrum_summary(self, log_w: np.ndarray) -> tuple[float, int]:
        """Condition number of ``W`` and its numerical rank (eigenvalues > 1e-12 * largest)."""
        spread = float(log_w.max() - log_w.min())
        condition = float(np.exp(spread)) if spread < 700 else float("inf")
        rank = int(np.count_nonzero(log_w > log_w.max() + np.log(1e-12)))
        return condition, rank

    # -- persistence ---------------------------------------------------------------------------
    def _extra_state(self) -> dict:
        return {"vectors": copy_array(self._vectors)}

    def _read_extra(self, reader: StateReader) -> dict:
        return {"_vectors": read_orthonormal(reader, "vectors", (self.n, self.n))}
