r"""ADA-FD and ADA-FFD as a ``torch.optim.Optimizer``: adaptive gradient on a sketch, per layer.

Wan & Zhang (TPAMI 2022), *Efficient adaptive online learning via frequent directions*,
section 5.4 (a CNN, Figs. 8-9) and 5.5 (fine-tuning, Fig. 10). Every parameter tensor ``W``
(a layer's weight or bias) is one vector :math:`\beta = \mathrm{vec}(W)` with its own
proximal matrix ``H`` and takes :class:`explorer.adagrad.AdaGrad`'s composite mirror descent
step (``method="cmd"``) with ``g_t`` the mini-batch gradient of that tensor:

.. math:: H_t = \delta I + (S_t^T S_t)^{1/2},\qquad
          \beta_{t+1} = \beta_t - \eta\, H_t^{-1} g_t,

``S_t`` a Frequent Directions sketch of the gradients (tau rows for ``variant="fd"``,
Algorithm 2; the doubling trick for ``"ffd"``, Algorithm 4), ``G_t`` itself ("full") or its
diagonal ("diag": ``torch.optim.Adagrad`` with ``eps = delta``). The paper's set-up is
``AdaFD([{"params": conv}, {"params": dense, "variant": "diag"}], lr=0.01)``. Steps are
float64 and all or nothing (docs/algorithms.md section 4.10). Needs ``sketch-explorer[torch]``.

>>> import torch
>>> _ = torch.manual_seed(0)
>>> layer = torch.nn.Linear(4, 1, bias=False)
>>> optimizer = AdaFD(layer.parameters(), lr=0.1, variant="ffd", tau=2)
>>> x, y = torch.ones(8, 4), torch.zeros(8, 1)
>>> for _ in range(3):
...     optimizer.zero_grad()
...     loss = torch.nn.functional.mse_loss(layer(x), y)
...     loss.backward()
...     _ = optimizer.step()
>>> optimizer.ranks()  # one direction seen: every gradient is a multiple of (1, 1, 1, 1)
[1]
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg.blas import ddot

try:
    import torch
except ModuleNotFoundError as error:  # the optional extra
    raise ModuleNotFoundError(
        "explorer.adagrad.torch_optim needs PyTorch, the optional extra: "
        "pip install 'sketch-explorer[torch]'") from error

from .._validation import SCALES, check_choice, check_int, check_matrix_size, check_scale
from ..errors import Diverged
from ..sketch import MAX_SQUARED_MASS
from ..state import StateReader, copy_array, state_part
from .proximal import PREFIX, kept_shapes, make_proximal
from .settings import VARIANTS, default_delta

__all__ = ["AdaFD"]

_OWNER = "AdaFD"
"""The name state refusals carry."""


class AdaFD(torch.optim.Optimizer):
    r"""ADA-FD / ADA-FFD (and ADA-FULL, ADA-DIAG) per parameter tensor, composite mirror descent.

    Parameters
    ----------
    params : iterable of tensors or of dicts (param groups)
        Each group may set its own ``lr``, ``variant``, ``tau`` and ``delta``.
    lr : float > 0
        The step size ``eta`` (the paper searches {1e-4, ..., 1}); a one-element tensor
        is read as its number (torch's optimizers accept one, and an LR scheduler then
        updates it in place).
    variant : {"ffd", "fd", "diag", "full"}
        The proximal matrix (module docstring); "ffd" is what the paper trains CNNs with.
        "full" keeps a d x d matrix per tensor: small layers only.
    tau : int >= 2
        Sketch size of "fd" and "ffd" (the paper's 20).
    delta : float > 0 or None
        ``H = delta I + ...``; None: the paper's, :func:`explorer.adagrad.default_delta`
        with CMD (1 for fd, ffd and full; 1e-8 for diag), filled in when the group is added.

    Every tensor must be a floating-point leaf with at least one entry, listed once across
    all groups (a tensor listed twice would enter ``H`` twice per step).

    State per tensor (``self.state[p]``): ``"proximal"`` (the
    :mod:`explorer.adagrad.proximal` object, e.g. its ``rank``), ``"step"`` (steps with a
    gradient), ``"gradient_mass"`` (``tr(G) = sum ||g||^2``), ``"n_shrinks"`` and
    ``"delta_total"`` (the sketch's shrinks and the sum of their amounts).
    ``lr`` and ``delta`` may change between steps (through ``param_groups``), as the
    linear learners' ``with_params``; ``variant`` and ``tau`` may not.
    """

    def __init__(self, params, lr: float = 0.01, *, variant: str = "ffd", tau: int = 20,
                 delta: float | None = None):
        super().__init__(params, {"lr": lr, "variant": variant, "tau": tau, "delta": delta})

    def add_param_group(self, param_group: dict) -> None:
        """Check the group's settings (``ValueError`` naming the bad one, the optimizer
        unchanged), fill ``delta`` None with the paper's, and give every tensor a fresh
        proximal matrix ``delta I``."""
        group = {**self.defaults, **{k: v for k, v in param_group.items() if k != "params"}}
        variant = check_choice("variant", group["variant"], VARIANTS)
        tau = check_int("tau", group["tau"], minimum=2)
        # checked as numbers; a tensor stays in the group, as torch's schedulers fill it in place
        lr = _kept("lr", group["lr"])
        delta = default_delta(variant, "cmd") if group["delta"] is None else _kept("delta", group["delta"])
        params = param_group["params"]
        if isinstance(params, (set, frozenset)):
            raise ValueError("a param group's tensors must be given in an order (a list or another "
                             "iterable), not a set: the state is saved by position")
        params = [params] if isinstance(params, torch.Tensor) else list(params)
        known = {id(q) for other in self.param_groups for q in other["params"]}
        for p in params:
            if not isinstance(p, torch.Tensor) or not p.is_floating_point():
                raise ValueError(f"AdaFD optimizes floating-point tensors, got {type(p).__name__}"
                                 f"{'' if not isinstance(p, torch.Tensor) else ' of dtype ' + str(p.dtype)}")
            if p.numel() == 0:
                raise ValueError(f"AdaFD optimizes tensors with at least one entry, got one of shape "
                                 f"{tuple(p.shape)}: leave it out of the optimizer")
            if id(p) in known:
                raise ValueError(f"a tensor of shape {tuple(p.shape)} is listed twice (in this group or "
                                 f"an earlier one); each tensor may be listed once, or its gradient "
                                 f"would enter H twice per step")
            known.add(id(p))
            for rows, columns in kept_shapes(variant, p.numel(), tau):
                check_matrix_size(f"variant {variant!r} for a tensor of {p.numel()} entries with "
                                  f"tau = {tau}", rows, columns)
        super().add_param_group({**param_group, "params": params, "variant": variant, "tau": tau,
                                 "lr": lr, "delta": delta})
        for p in params:
            self.state[p] = _fresh_state(variant, p.numel(), tau, delta)

    @torch.no_grad()
    def step(self, closure=None):
        """One composite mirror descent step for every tensor with a gradient; returns the
        closure's loss (None without one). All or nothing (module docstring)."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        scales = self._checked_groups()  # id(group) -> (lr, delta), floats
        rounds = []  # (param, group, state, g, new mass): checked before anything changes
        for index, (p, group) in enumerate(self._tensors()):
            if p.grad is None:
                continue
            if p.grad.is_sparse:
                raise ValueError(f"parameter {index}: AdaFD takes dense gradients, got a sparse one; "
                                 "nothing was updated")
            g = p.grad.detach().reshape(-1).to(device="cpu", dtype=torch.float64, copy=True).numpy()
            squared = ddot(g, g)  # BLAS directly: an overflow gives inf, no warning
            if not math.isfinite(squared):  # NaN or inf in g, or an overflow of its square
                raise ValueError(f"parameter {index} (shape {tuple(p.shape)}): the gradient is not finite "
                                 f"or too large (||g||^2 = {squared:.3g}); nothing was updated")
            state = self.state[p]
            mass = state["gradient_mass"] + squared
            if not mass <= MAX_SQUARED_MASS:
                raise ValueError(f"parameter {index} (shape {tuple(p.shape)}): the gradients' total "
                                 f"squared norm tr(G) would reach {mass:.3g}, past {MAX_SQUARED_MASS:.0e}; "
                                 f"lower lr or rescale the loss; nothing was updated")
            rounds.append((p, group, state, g, mass))
        updates, saved = [], []
        try:
            with np.errstate(over="ignore", invalid="ignore"):
                for p, group, state, g, mass in rounds:
                    if not g.any():  # H and the parameter stay (a linear learner's l' = 0)
                        continue
                    lr, delta = scales[id(group)]
                    proximal = state["proximal"]
                    saved.append((proximal, proximal.checkpoint()))
                    shrink = proximal.add(g)  # ADA-FD's sketch shrinks here
                    beta = p.detach().reshape(-1).to(device="cpu", dtype=torch.float64).numpy()
                    beta = beta - lr * proximal.solve(g, delta)
                    beta = torch.from_numpy(beta).to(p.dtype).view_as(p)  # rounded once (float32)
                    if not torch.isfinite(beta).all():
                        raise Diverged(f"the new value of a parameter of shape {tuple(p.shape)} is not "
                                       f"finite (lr = {lr:g} too large or delta = {delta:g} too "
                                       f"small); nothing was updated")
                    updates.append((p, state, beta, shrink))
        except BaseException as error:  # whatever it was, every sketch goes back
            for proximal, checkpoint in reversed(saved):
                proximal.rollback(checkpoint)
            if isinstance(error, Diverged) or not isinstance(error, (ValueError, ArithmeticError)):
                raise
            # LinAlgError, FD's ShrinkFailed
            raise Diverged(f"the update of H failed ({error}); nothing was updated") from None
        for p, group, state, g, mass in rounds:
            state["step"] += 1
            state["gradient_mass"] = mass
        for p, state, beta, shrink in updates:
            if shrink is None:
                shrink = state["proximal"].compress()  # ADA-FFD's; cannot fail (orthonormal products)
            if shrink is not None:
                state["n_shrinks"] += 1
                state["delta_total"] += shrink.delta
            p.copy_(beta)
        return loss

    def ranks(self) -> list[int]:
        """The rank of each tensor's sketch (of ``G`` for "full", non-zero coordinates for
        "diag"), in the order of the param groups."""
        return [self.state[p]["proximal"].rank for p, _ in self._tensors()]

    def _tensors(self):
        for group in self.param_groups:
            for p in group["params"]:
                yield p, group

    def _checked_groups(self) -> dict:
        """Each group's ``lr`` and ``delta`` as floats (by ``id`` of the group), after checking
        them and that every tensor has its state and is listed once: the step's first check,
        a ``ValueError`` before anything changes (``param_groups`` may have been edited)."""
        scales, seen = {}, set()
        for number, group in enumerate(self.param_groups):
            try:
                scales[id(group)] = (_scale("lr", group.get("lr")), _scale("delta", group.get("delta")))
            except ValueError as error:
                raise ValueError(f"param group {number}: {error}; nothing was updated") from None
            for p in group["params"]:
                if id(p) in seen:
                    raise ValueError(f"param group {number}: a tensor of shape {tuple(p.shape)} is "
                                     f"listed twice; each tensor may be listed once; nothing was updated")
                seen.add(id(p))
                if "proximal" not in self.state.get(p, {}):
                    raise ValueError(f"param group {number}: a tensor of shape {tuple(p.shape)} was "
                                     f"not added through the optimizer (add_param_group); nothing "
                                     f"was updated")
        return scales

    # -- persistence -------------------------------------------------------------------
    def state_dict(self) -> dict:
        """torch's layout (``"state"`` by parameter index, ``"param_groups"``), each tensor's
        state flat: counters as numbers and the proximal matrix's arrays under
        ``"proximal."`` as float64 tensors (copies, in the proximal code's memory layout)."""
        packed = super().state_dict()
        packed["state"] = {index: _plain_state(entry) for index, entry in packed["state"].items()}
        return packed

    def load_state_dict(self, state_dict: dict) -> None:
        """Continue from ``state_dict``, checked before anything is stored: the same number
        of groups and tensors, each group's ``variant`` and ``tau`` this optimizer's own,
        ``lr`` and ``delta`` in [1e-100, 1e100] (loaded), and every tensor's sketch as
        :meth:`explorer.adagrad.proximal.FullProximal.read_state` and its siblings check it,
        with ``gradient_mass`` at least what the sketch holds. A ``ValueError`` names the
        key; the optimizer is then unchanged."""
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups) or any(
                len(saved["params"]) != len(group["params"])
                for saved, group in zip(saved_groups, self.param_groups)):
            raise ValueError("AdaFD state: its param groups do not match this optimizer's "
                             "(another number of groups or of tensors in a group)")
        deltas = []  # the saved delta of each tensor's group
        for saved, group in zip(saved_groups, self.param_groups):
            reader = StateReader({**saved, **{key: _number(saved[key]) for key in ("lr", "delta")
                                              if key in saved}}, _OWNER, prefix="param_groups.")
            reader.same("variant", group["variant"])
            reader.same("tau", group["tau"])
            reader.number("lr", minimum=SCALES[0], maximum=SCALES[1])  # checked; torch's load stores it
            deltas.extend([reader.number("delta", minimum=SCALES[0], maximum=SCALES[1])] * len(group["params"]))
        tensors = list(self._tensors())
        staged = {}
        for index, entry in state_dict["state"].items():
            if not (isinstance(index, int) and 0 <= index < len(tensors)):
                raise ValueError(f"AdaFD state: tensor index {index!r} is not one of 0..{len(tensors) - 1}")
            p, group = tensors[index]
            staged[p] = _read_tensor_state(entry, group["variant"], p.numel(), group["tau"], deltas[index])
        super().load_state_dict({**state_dict, "state": {}})
        for p, group in self._tensors():
            self.state[p] = staged.get(p) or _fresh_state(group["variant"], p.numel(), group["tau"],
                                                           group["delta"])


def _number(value):
    """A one-element floating-point tensor's number (what torch's LR schedulers keep as
    ``lr``); anything else as it is."""
    if isinstance(value, torch.Tensor) and value.numel() == 1 and value.is_floating_point():
        return value.item()
    return value


def _scale(name: str, value) -> float:
    """``lr`` or ``delta`` as a float in :data:`explorer._validation.SCALES`, a one-element
    floating-point tensor counted as its number; else a ``ValueError`` saying what is allowed."""
    if isinstance(value, torch.Tensor) and _number(value) is value:
        raise ValueError(f"{name} must be a number or a one-element floating-point tensor, got a "
                         f"tensor of shape {tuple(value.shape)} and dtype {value.dtype}")
    try:
        return check_scale(name, _number(value))
    except OverflowError:  # an int past float's range: float() overflows
        raise ValueError(f"{name} must be a number in [{SCALES[0]:.0e}, {SCALES[1]:.0e}], got an "
                         f"integer too large for a float") from None


def _kept(name: str, value):
    """``value`` checked by :func:`_scale`: the float, or the tensor itself."""
    number = _scale(name, value)
    return value if isinstance(value, torch.Tensor) else number


def _fresh_state(variant: str, d: int, tau: int, delta) -> dict:
    delta = _scale("delta", delta)
    return {"proximal": make_proximal(variant, d, tau, delta), "step": 0, "gradient_mass": 0.0,
            "n_shrinks": 0, "delta_total": 0.0}


def _plain_state(entry: dict) -> dict:
    """One tensor's state with the proximal object as plain entries (arrays as tensors)."""
    plain = {key: value for key, value in entry.items() if key != "proximal"}
    for key, value in entry["proximal"].state_dict().items():
        plain[PREFIX + key] = torch.from_numpy(copy_array(value)) if isinstance(value, np.ndarray) else value
    return plain


def _read_tensor_state(entry: dict, variant: str, d: int, tau: int, delta: float) -> dict:
    """A checked state for one tensor (:func:`_plain_state`'s inverse): arrays copied out of
    the tensors in their layout (the loaded dict stays the caller's), the proximal matrix
    read and restored on a fresh object, the counters checked."""
    if not isinstance(entry, dict):
        raise ValueError(f"AdaFD state: a tensor's state must be a dict, got {type(entry).__name__}")
    arrays = {key: copy_array(value.numpy()) if isinstance(value, torch.Tensor) else value
              for key, value in state_part(entry, PREFIX).items()}
    proximal = make_proximal(variant, d, tau, delta)
    checked = proximal.read_state(arrays, _OWNER)
    reader = StateReader(entry, _OWNER, prefix="state.")
    mass = reader.number("gradient_mass", minimum=0.0, maximum=MAX_SQUARED_MASS)
    delta_total = reader.number("delta_total", minimum=0.0)
    floor = checked["trace"] + (delta_total if variant == "ffd" else 0.0)
    if not mass >= floor * (1 - 1e-9):
        raise reader.refuse("gradient_mass", f">= {floor:.6g}, what the proximal matrix holds", mass)
    step = reader.count("step")
    n_shrinks = reader.count("n_shrinks", maximum=step)
    proximal.restore(checked)
    return {"proximal": proximal, "step": step, "gradient_mass": mass, "n_shrinks": n_shrinks,
            "delta_total": delta_total}
