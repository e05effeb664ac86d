"""Fuzz registry entries for the torch optimizer :class:`explorer.adagrad.torch_optim.AdaFD`
(tests/fuzz_registry.py adds them only when torch is importable).

For each of the four variants: a step with ``lr`` or ``delta`` replaced in the param group
(a 0-d tensor, a string, None, zero, negative, NaN, 1e300 ...), a step on a gradient with
NaN, inf or entries of 1e300 / 1e-320, param groups that list a tensor twice, hold a
0-element tensor or an integer tensor, and a tampered ``state_dict`` loaded back. A refusal
must leave every parameter and the optimizer's state bit-identical; an acceptance must
leave them finite, and a further ordinary step must run (or be refused cleanly).
A tensor listed twice must step exactly as when listed once.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import torch

from explorer.adagrad.torch_optim import AdaFD

__all__ = ["torch_entries"]

VARIANTS = ("ffd", "fd", "diag", "full")
JUNK = (torch.tensor(0.1), torch.tensor([0.1]), "0.1", None, -0.1, 0.0, math.nan, math.inf, 1e300, 1e-300, True,
        1e101, 10 ** 400)


def _model():
    torch.manual_seed(0)
    return torch.nn.Linear(4, 3)


def _gradients(model, seed: int = 0) -> None:
    generator = torch.Generator().manual_seed(seed)
    x, y = torch.randn(8, 4, generator=generator), torch.randn(8, 3, generator=generator)
    model.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()


def _flat(value):
    """``value`` (a state dict, a list, a tensor) as nested tuples of comparable leaves."""
    if isinstance(value, dict):
        return tuple((repr(k), _flat(v)) for k, v in sorted(value.items(), key=lambda item: repr(item[0])))
    if isinstance(value, (list, tuple)):
        return tuple(_flat(v) for v in value)
    if isinstance(value, torch.Tensor):
        return ("tensor", str(value.dtype), tuple(value.shape), value.detach().cpu().numpy().tobytes())
    if isinstance(value, np.ndarray):
        return ("array", str(value.dtype), value.shape, value.tobytes())
    return (type(value).__name__, repr(value))


def _observe(subject, scratch):
    if subject is None:
        return None
    model, optimizer = subject
    return _flat([list(model.parameters()), optimizer.state_dict()])


def _finite(model, optimizer) -> None:
    for p in model.parameters():
        assert torch.isfinite(p).all(), "a parameter is not finite"
    for index, entry in optimizer.state_dict()["state"].items():
        for key, value in entry.items():
            if isinstance(value, torch.Tensor):
                assert torch.isfinite(value).all(), f"state {index} {key!r} is not finite"
            elif isinstance(value, float):
                assert math.isfinite(value), f"state {index} {key!r} = {value}"


def _setup(value, scratch):
    kind, variant, *rest = value
    if kind == "groups":
        return None
    model = _model()
    optimizer = AdaFD(model.parameters(), lr=0.1, variant=variant, tau=2)
    _gradients(model, 1)
    optimizer.step()
    _gradients(model, 2)
    if kind in ("lr", "delta"):
        optimizer.param_groups[0][kind] = rest[0]
    elif kind == "gradient":
        grad = model.weight.grad
        how = rest[0]
        if how in ("nan", "inf"):
            grad[0, 1] = math.nan if how == "nan" else math.inf
        elif how == "zero":
            grad.zero_()
        else:
            grad.mul_(float(how))  # a scale: overflows to inf in float32 for 1e300
    return model, optimizer


def _call(subject, value, scratch):
    kind, variant, *rest = value
    if kind == "groups":
        return _groups(variant, rest[0])
    model, optimizer = subject
    if kind == "state dict":
        key, junk = rest
        saved = copy.deepcopy(optimizer.state_dict())
        if key.startswith("group "):
            saved["param_groups"][0][key[6:]] = junk
        else:
            entry = saved["state"][0]
            name = sorted(entry)[int(key[6:]) % len(entry)]
            if isinstance(entry[name], torch.Tensor):
                entry[name] = torch.full_like(entry[name], junk) if isinstance(junk, float) else junk
            else:
                entry[name] = junk
        optimizer.load_state_dict(saved)
        return subject
    optimizer.step()
    return subject


def _groups(variant, how):
    model = _model()
    params = list(model.parameters())
    if how == "listed twice":
        spec = [params[0], params[0], params[1]]
    elif how == "in two groups":
        spec = [{"params": [params[0]]}, {"params": [params[0], params[1]]}]
    elif how == "0-element tensor":
        spec = [*params, torch.zeros(0, requires_grad=True)]
    elif how == "integer tensor":
        spec = [*params, torch.zeros(3, dtype=torch.int64)]
    elif how == "not a tensor":
        spec = [*params, "weight"]
    else:  # a junk lr, delta or tau
        setting, junk = how
        spec = [{"params": params, setting: junk}]
    optimizer = AdaFD(spec, lr=0.1, variant=variant, tau=2)
    for p in [q for group in optimizer.param_groups for q in group["params"]]:
        if p.numel() == 0:
            p.grad = torch.zeros(0)
    _gradients(model, 1)
    optimizer.step()
    return model, optimizer


def _accept(subject, value, result, scratch):
    model, optimizer = result
    _finite(model, optimizer)
    if value[0] == "groups" and value[2] in ("listed twice", "in two groups"):
        once = _model()
        reference = AdaFD(once.parameters(), lr=0.1, variant=value[1], tau=2)
        _gradients(once, 1)
        reference.step()
        for a, b in zip(model.parameters(), once.parameters()):
            assert torch.equal(a, b), "a tensor listed twice stepped differently from once"
    _gradients(model, 3)
    before = _observe(result, scratch)
    try:
        optimizer.step()
    except ValueError:
        assert _observe(result, scratch) == before, "a refused ordinary step changed the state"
    _finite(model, optimizer)


def _lr_cases():
    return [(kind, variant, junk) for variant in VARIANTS for kind in ("lr", "delta") for junk in JUNK]


def _gradient_cases():
    return [("gradient", variant, how) for variant in VARIANTS
            for how in ("nan", "inf", "zero", "1e300", "1e30", "1e-30", "1e-320")]


def _group_cases():
    hows = ["listed twice", "in two groups", "0-element tensor", "integer tensor", "not a tensor",
            *[(setting, junk) for setting in ("lr", "delta", "tau") for junk in JUNK[:8]]]
    return [("groups", variant, how) for variant in VARIANTS for how in hows]


def _state_cases():
    junk = (math.nan, -1.0, "x", None, torch.tensor(0.1))
    keys = [f"group {k}" for k in ("lr", "delta", "variant", "tau")] + [f"entry {i}" for i in range(4)]
    return [("state dict", variant, key, j) for variant in VARIANTS for key in keys for j in junk]


def torch_entries(Entry, Family) -> list:
    common = dict(setup=_setup, observe=_observe, valid=lambda: [("lr", "ffd", 0.05)])
    return [
        Entry("explorer.adagrad.torch_optim:AdaFD.step", "torch optimizer", _call, _accept, **common,
              families={"lr and delta at step time": Family(values=_lr_cases),
                        "gradients": Family(values=_gradient_cases)}),
        Entry("explorer.adagrad.torch_optim:AdaFD.add_param_group", "torch optimizer", _call, _accept, **common,
              covers=("explorer.adagrad.torch_optim:AdaFD.__init__",),
              families={"param groups": Family(values=_group_cases)}),
        Entry("explorer.adagrad.torch_optim:AdaFD.load_state_dict", "torch optimizer", _call, _accept, **common,
              families={"tampered state dicts": Family(values=_state_cases)}),
    ]
