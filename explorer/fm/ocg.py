r"""Online conditional gradient (OCG) on the compact convex FM: the S-FTRL paper's third baseline.

Luo et al. (KDD 2018, section 5.1) compare S-FTRL with OGD, FTRL and OCG "based on compact
convexified FM [28]" (Lin et al., WWW 2018): ``Theta`` (the compact matrix, bias and linear
weights included) is kept in the nuclear-norm ball ``K = {Theta symmetric : ||Theta||_* <= tau}``
and learnt by the projection-free online conditional gradient of Hazan and Kale (ICML 2012;
Hazan, *Introduction to Online Convex Optimization*, 2016, section 7.3); docs/algorithms.md
section 6.7 has the derivation.

Round t (``Theta_1 = 0``): predict ``z_t = a_hat^T Theta_t a_hat``, suffer ``phi(z_t)``, add the
gradient ``q_t a_hat a_hat^T`` to the sum ``S_t``, and

.. math:: G_t = \eta S_t + 2\,\Theta_t, \qquad
          V_t = \operatorname{argmin}_{V \in K} \langle G_t, V\rangle = -\tau\,\mathrm{sign}(\lambda)\,u u^T,
          \qquad \Theta_{t+1} = (1 - \sigma_t)\Theta_t + \sigma_t V_t,

with ``(lambda, u)`` the eigenpair of ``G_t`` of largest ``|lambda|``, found by
``iterations`` power steps started from the previous round's ``u`` (the first from
``seed``), and ``sigma_t = min(1, 2 / sqrt(t))``. Every ``Theta_t`` is a convex combination
of points of ``K``, so it stays in the ball with no projection. ``S`` is a dense
(d+1) x (d+1) matrix (O(d^2) per power step, the cost the paper charges OCG with);
``Theta = W^T diag(lambda) W`` is kept factorized with at most ``rank`` orthonormal rows
(past ``rank`` the smallest ``|lambda|`` are dropped, which keeps it in ``K``; with
``rank >= d + 1`` this is exactly OCG).

>>> fm = OCGFM(d=4, tau=5.0, eta=0.5, seed=0)
>>> for user, item, rating in [(0, 2, 4.0), (1, 3, 2.0), (0, 3, 3.0)] * 20:
...     _ = fm.learn(([user, item], [1.0, 1.0]), rating)
>>> round(fm.predict(([0, 2], [1.0, 1.0])), 2), fm.nuclear_norm() <= 5.0 + 1e-9
(1.62, True)
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg

from .._validation import check_int, check_scale
from ..hooks import StepRecord
from ..learner import RoundRefused
from ..state import StateReader, copy_array, generator_json, stateful
from .convex import MAX_THETA_ENTRY, ConvexFM

__all__ = ["OCGFM", "leading_eigenpair", "OCG_DEFAULT_ETA", "OCG_DEFAULT_TAU", "OCG_MAX_SIDE",
           "OCG_MAX_ITERATIONS", "OCG_MAX_POWER_WORK"]

OCG_DEFAULT_ETA = {"squared": 0.05, "logistic": 0.25}
"""OCG's weight of the gradient sum in ``G_t`` (the paper gives none): the best of a few
values on MovieLens-100K's first 3,000 ratings (validated on the next 1,000) and on
Spambase's 80/20 split, with ``tau`` below; not tuned further."""

OCG_DEFAULT_TAU = {"squared": 10.0, "logistic": 20.0}
"""The radius of the nuclear-norm ball (the paper gives none), picked with ``eta`` above."""

OCG_MAX_SIDE = 10 ** 4
"""The largest side ``d + 1`` of the gradient sum (1e8 entries, 800 MB), hence ``d <= 9999``;
also the largest useful ``rank`` (``rank >= d + 1`` is exact OCG), so the bound on it."""

OCG_MAX_ITERATIONS = 10 ** 5
"""The most power steps per round."""

OCG_MAX_POWER_WORK = 10 ** 9
"""The most multiply-adds of a round's power steps, ``iterations * (d + 1)^2``: a round takes
seconds at most, never hours. At MovieLens-100K's d = 2625 that allows 145 steps."""


def _at_most(name: str, value: int, bound: int, why: str = "") -> int:
    if value > bound:
        raise ValueError(f"{name} must be at most {bound}{' (' + why + ')' if why else ''}, got {value}")
    return value


def leading_eigenpair(matvec, start: np.ndarray, iterations: int) -> tuple[float, np.ndarray]:
    """``iterations`` power steps on a symmetric operator: ``(lambda, u)``, ``u`` a unit vector
    close to the eigenvector of largest ``|lambda|`` and ``lambda`` the Rayleigh quotient of
    the last vector multiplied (its sign is the eigenvalue's). ``matvec(v) = G v``.

    If ``G v`` is zero the power method is stuck: ``(0.0, v)`` (the caller decides).

    >>> G = np.diag([1.0, -3.0, 2.0])
    >>> value, u = leading_eigenpair(lambda v: G @ v, np.ones(3), 60)
    >>> round(value, 6), np.round(np.abs(u), 6).tolist()
    (-3.0, [0.0, 1.0, 0.0])
    """
    v = start / np.linalg.norm(start)
    value = 0.0
    for _ in range(iterations):
        w = matvec(v)
        size = float(np.linalg.norm(w))
        if not size > 0.0:
            return 0.0, v
        value = float(v @ w)
        v = w / size
    return value, v


@stateful
class OCGFM(ConvexFM):
    r"""Online conditional gradient on the compact convex FM in a nuclear-norm ball (the OCG of
    Luo et al., KDD 2018, section 5 and Tables 2-3, after Lin et al. 2018 and Hazan & Kale 2012).

    .. math:: \Theta_{t+1} = (1-\sigma_t)\,\Theta_t - \sigma_t\,\tau\,\mathrm{sign}(\lambda_t)\,u_t u_t^T,
              \quad (\lambda_t, u_t) \text{ the top eigenpair of } \eta S_t + 2\Theta_t,
              \quad \sigma_t = \min(1, 2/\sqrt t),

    ``S_t`` the sum of the gradients ``q_s a_hat_s a_hat_s^T`` so far. ``||Theta_t||_* <= tau``
    always (:meth:`nuclear_norm`). See the module docstring for what is stored.

    Parameters
    ----------
    d : number of features (``Theta`` is (d+1) x (d+1): ``a_hat = [a; 1]``).
    eta : weight of the gradient sum in ``G_t``; default 0.05 ("squared") or 0.25
        ("logistic"). Hot: ``with_params(eta=...)`` weighs the stored sum differently from
        the next round on.
    tau : radius of the nuclear-norm ball; default 10 ("squared") or 20 ("logistic").
    iterations : power steps per round (warm-started from the last round's eigenvector),
        at most :data:`OCG_MAX_ITERATIONS` and ``iterations * (d + 1)^2`` at most
        :data:`OCG_MAX_POWER_WORK` (so one round takes seconds at most).
    rank : most eigenpairs ``Theta`` keeps (``rank >= d + 1``: exact OCG), at most
        :data:`OCG_MAX_SIDE`.
    loss : "squared" (``(z - b)^2 / 2``) or "logistic" (labels -1/+1).
    seed : the first power-step start vector (and a fresh one if a start is ever in the
        null space of ``G_t``); an integer in [0, 2**63 - 1] or None.

    Sizes are bounded (``d + 1`` at most :data:`OCG_MAX_SIDE`, ``iterations`` and ``rank``
    as above), in the constructor and in a state file alike: a ``ValueError`` names the
    parameter and its bound.

    The step record adds ``rank`` (eigenpairs kept) and ``alpha``, here ``sigma_t``.

    >>> fm = OCGFM(d=3, tau=2.0, seed=1)
    >>> record = fm.step([1.0, 0.0, 0.0], 3.0)
    >>> record.loss, record.rank, round(record.alpha, 3), round(fm.nuclear_norm(), 6)
    (4.5, 1, 1.0, 2.0)
    """

    _default_eta = OCG_DEFAULT_ETA

    def __init__(self, d: int, *, eta: float | None = None, tau: float | None = None,
                 iterations: int = 2, rank: int = 20, loss: str = "squared", seed: int | None = None):
        super().__init__(d, eta=eta, loss=loss)
        check_scale("eta", self.eta)  # within SCALES: the scaled power steps below stay finite
        self.tau = check_scale("tau", OCG_DEFAULT_TAU[self.loss] if tau is None else tau)
        self.iterations = _at_most("iterations", check_int("iterations", iterations, minimum=1),
                                   OCG_MAX_ITERATIONS)
        self.rank = _at_most("rank", check_int("rank", rank, minimum=1), OCG_MAX_SIDE,
                             "rank >= d + 1 is already exact OCG")
        self.seed = None if seed is None else _at_most("seed", check_int("seed", seed, minimum=0),
                                                       2 ** 63 - 1)
        n = self.d + 1
        if n > OCG_MAX_SIDE:
            raise ValueError(f"OCGFM(d={d}) keeps the ({d} + 1)^2 gradient sum, more than 1e8 "
                             f"entries: d must be at most {OCG_MAX_SIDE - 1}; SketchedFTRL needs O(m d)")
        if self.iterations * n * n > OCG_MAX_POWER_WORK:
            raise ValueError(f"iterations = {self.iterations} power steps on the ({d} + 1)^2 gradient "
                             f"sum would take {self.iterations * n * n:.2g} multiply-adds a round; "
                             f"at most {OCG_MAX_POWER_WORK:.0e} are allowed, so iterations <= "
                             f"{OCG_MAX_POWER_WORK // (n * n)} at d = {d}")
        self._sum = np.zeros((n, n))  # S: the sum of the gradients q a_hat a_hat^T
        self._bound = 0.0  # >= max |S_ij|
        self._basis = np.zeros((0, n))  # W: orthonormal rows
        self._values = np.zeros(0)  # lambda: Theta = W^T diag(lambda) W
        self._rng = np.random.default_rng(self.seed)
        self._direction = self._draw()  # the next power iteration's start
        self._last = None  # (sigma, rank) of the last round, for its record

    def __repr__(self) -> str:
        return (f"OCGFM(d={self.d}, eta={self.eta:g}, tau={self.tau:g}, iterations={self.iterations}, "
                f"rank={self.rank}, loss={self.loss!r}) t={self.t}")

    def _draw(self) -> np.ndarray:
        v = self._rng.standard_normal(self.d + 1)
        return v / np.linalg.norm(v)

    # -- the quantities the protocol asks for ----------------------------------------------
    def _z_bound(self, val, squared_norm: float) -> float:
        # |z| = |sum_k lambda_k (w_k . a)^2| <= sum |lambda_k| ||a||^2 (unit rows w_k)
        return float(np.abs(self._values).sum()) * squared_norm

    def _z(self, idx, val) -> float:
        if not self._values.size:
            return 0.0
        p = (self._basis @ val) if idx is None else (self._basis.take(idx, axis=1) @ val)
        return float(self._values @ (p * p))

    def _update(self, idx, val, q: float, squared_norm: float):
        """Add ``q a_hat a_hat^T`` to ``S`` and move ``Theta`` toward the ball's linear minimizer;
        everything is computed first and stored at the end (``RoundRefused`` stores nothing)."""
        t = self.t + 1
        growth = abs(q) * squared_norm
        bound = self._bound + growth
        if not bound <= MAX_THETA_ENTRY:
            bound = float(np.abs(self._sum).max()) + growth
            if not bound <= MAX_THETA_ENTRY:
                raise RoundRefused(f"an entry of the gradient sum would pass {MAX_THETA_ENTRY:.0e} "
                                  f"(|q| ||a_hat||^2 = {growth:.3g}): the learner diverged; rescale the data")
        # G v 2^-k with 2^k about eta max|S| + 2 tau: nothing overflows (eta and tau lie in
        # SCALES), and a power of two scales exactly, so the unit vectors do not depend on k
        # (nor on how loose the bound is: a resumed learner recomputes it).
        k = math.frexp(self.eta)[1] + math.frexp(bound + 2.0 * self.tau / self.eta)[1]
        eta_c, two_c = math.ldexp(self.eta, -k), math.ldexp(2.0, -k)
        S, W, lam = self._sum, self._basis, self._values
        full = idx if idx is not None else slice(None)

        def matvec(v):
            out = S @ v
            out[full] += (q * float(val @ v[full])) * val  # this round's gradient, not stored yet
            out *= eta_c
            if lam.size:
                out += W.T @ (two_c * lam * (W @ v))
            return out

        value, u = leading_eigenpair(matvec, self._direction, self.iterations)
        rng_state = None
        if value == 0.0:  # the start is in G's null space (or G = 0): one fresh start
            rng_state = self._rng.bit_generator.state
            value, u = leading_eigenpair(matvec, self._draw(), self.iterations)
        sigma = min(1.0, 2.0 / math.sqrt(t))
        if value == 0.0:  # G = 0: every point of K minimizes <G, V>; Theta stays
            basis, values, direction = W, lam, u
        else:
            basis, values = self._move(u, -math.copysign(self.tau, value), sigma)
            direction = u
        if not (np.isfinite(values).all() and np.isfinite(basis).all() and np.isfinite(direction).all()):
            if rng_state is not None:
                self._rng.bit_generator.state = rng_state
            raise RoundRefused("the eigenvector of the gradient sum is not finite: the learner "
                              f"diverged; lower eta (now {self.eta:g})")
        # commit
        if idx is None:
            scipy.linalg.blas.dger(q, val, val, a=S.T, overwrite_a=True)
        else:
            block = np.ix_(idx, idx)
            S[block] += q * np.outer(val, val)
        self._bound = bound
        self._basis, self._values, self._direction = basis, values, direction
        self._last = sigma
        return None

    def _move(self, u: np.ndarray, scale: float, sigma: float) -> tuple[np.ndarray, np.ndarray]:
        """``(1 - sigma) W^T diag(lambda) W + sigma scale u u^T`` as a new ``(W, lambda)``:
        QR of the stacked rows, an eigen-decomposition of the small core, the ``rank``
        eigenpairs of largest magnitude kept (exact zeros dropped)."""
        rows = np.vstack([self._basis, u[None, :]])
        core = np.append((1.0 - sigma) * self._values, sigma * scale)
        Q, R = np.linalg.qr(rows.T)  # rows^T = Q R: Theta = Q (R diag(core) R^T) Q^T
        small = (R * core) @ R.T
        small = (small + small.T) / 2.0
        values, vectors = np.linalg.eigh(small)
        order = np.argsort(-np.abs(values), kind="stable")[:min(self.rank, self.d + 1)]
        # a direction already in W adds a zero eigenvalue (up to rounding): dropped
        order = order[np.abs(values[order]) > values.size * np.finfo(float).eps * np.abs(values).max()]
        return np.ascontiguousarray((Q @ vectors[:, order]).T), values[order]

    def _record(self, z: float, loss: float, q: float, shrink) -> StepRecord:
        return StepRecord(t=self.t, loss=loss, prediction=z, gradient_scale=q,
                          rank=int(self._values.size), alpha=self._last)

    # -- inspection ------------------------------------------------------------------------
    def theta(self) -> np.ndarray:
        """``W^T diag(lambda) W``, (d+1) x (d+1): for inspection and tests only."""
        return (self._basis.T * self._values) @ self._basis

    def gradient_sum(self) -> np.ndarray:
        """A copy of ``S``, the sum of the gradients so far ((d+1) x (d+1))."""
        return self._sum.copy()

    def nuclear_norm(self) -> float:
        """``||Theta||_* = sum |lambda_k|`` (at most ``tau``, up to rounding)."""
        return float(np.abs(self._values).sum())

    # -- state -----------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {**self._base_state(), "tau": self.tau, "iterations": self.iterations,
                "rank": self.rank, "seed": -1 if self.seed is None else self.seed,
                "rng": generator_json(self._rng), "gradient_sum": copy_array(self._sum),
                "basis": copy_array(self._basis), "eigenvalues": copy_array(self._values),
                "direction": copy_array(self._direction),
                "sigma": 0.0 if self._last is None else self._last}

    @classmethod
    def from_state_dict(cls, state: dict) -> "OCGFM":
        """A learner that continues exactly where the saved one stopped (checked:
        :meth:`load_state_dict`)."""
        reader = StateReader(state, cls)
        d = reader.count("d", minimum=1, maximum=OCG_MAX_SIDE - 1)
        reader.check_shape("gradient_sum", (d + 1, d + 1), f"d = {d}")  # before allocating
        iterations = reader.count("iterations", minimum=1, maximum=min(
            OCG_MAX_ITERATIONS, OCG_MAX_POWER_WORK // (d + 1) ** 2))
        fm = cls(d, tau=reader.number("tau", minimum=0.0, strict_minimum=True),
                 iterations=iterations, rank=reader.count("rank", minimum=1, maximum=OCG_MAX_SIDE),
                 seed=reader.seed(), **cls._read_settings(reader))
        fm.load_state_dict(state)
        return fm

    def load_state_dict(self, state: dict) -> None:
        """Become the learner ``state`` describes, in place (same d, eta, tau, iterations, rank,
        loss). Checked before anything is stored: ``S`` finite within
        :data:`~explorer.fm.MAX_THETA_ENTRY` (zero at ``t = 0``), ``W`` with orthonormal rows
        (at most ``rank``), ``sum |lambda| <= tau``, a unit start vector, the generator."""
        reader = StateReader(state, type(self))
        self._check_settings(reader)
        for key in ("tau", "iterations", "rank"):
            reader.same(key, getattr(self, key))
        t = reader.count("t")
        seed = reader.seed()
        generator = reader.generator_state()
        n = self.d + 1
        S = reader.array("gradient_sum", (n, n))
        largest = float(np.abs(S).max())
        if not largest <= MAX_THETA_ENTRY:
            raise reader.refuse("gradient_sum", f"entries within +-{MAX_THETA_ENTRY:.0e}", largest)
        if t == 0 and largest > 0:
            raise reader.refuse("gradient_sum", "all zero at t = 0", f"|entry| {largest:.3g}")
        shape = reader.shape("eigenvalues")
        if len(shape) != 1 or not shape[0] <= min(self.rank, n) or (t == 0 and shape[0]):
            raise reader.refuse("eigenvalues", f"a vector of at most {min(self.rank, n)} numbers "
                                "(none at t = 0)", shape)
        values = reader.array("eigenvalues", shape)
        basis = reader.array("basis", (shape[0], n))
        if not (np.abs(basis).max(initial=0.0) <= 1.0 + 1e-8  # first: no overflow below
                and np.abs(basis @ basis.T - np.eye(shape[0])).max(initial=0.0) <= 1e-8):
            raise reader.refuse("basis", "orthonormal rows", "rows that are not")
        if not np.abs(values).sum() <= self.tau * (1 + 1e-9):
            raise reader.refuse("eigenvalues", f"of absolute sum at most tau = {self.tau:g}",
                                float(np.abs(values).sum()))
        direction = reader.array("direction", (n,))
        if not (np.abs(direction).max() <= 1.0 + 1e-8 and abs(np.linalg.norm(direction) - 1.0) <= 1e-8):
            raise reader.refuse("direction", "a unit vector", "a vector of another norm")
        sigma = reader.number("sigma", minimum=0.0, maximum=1.0)  # 0: no move yet
        self._sum[...] = S
        self._bound = largest
        self._basis, self._values, self._direction = basis, values, direction
        self._rng.bit_generator.state = generator
        self.seed, self.t = seed, t
        self._last = sigma or None
