"""explorer.adagrad.torch_optim.AdaFD: ADA-FD / ADA-FFD as a torch optimizer (Wan & Zhang section 5.4).

The optimizer reuses :mod:`explorer.adagrad.proximal`, so on a linear model it must take
exactly the steps of :class:`explorer.adagrad.AdaGrad` (CMD) on the same gradients, and its
ADA-DIAG must agree with ``torch.optim.Adagrad``, an independent oracle. Then the contract of
every learner: refusals with the optimizer unchanged, bit-identical resume through
``torch.save``, determinism by seed, no NaN on a zero gradient, and a clear error without torch.
"""

from __future__ import annotations

import io
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

from explorer.adagrad import AdaGrad  # noqa: E402
from explorer.adagrad.torch_optim import AdaFD  # noqa: E402
from explorer.errors import Diverged  # noqa: E402


def _small_cnn(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Conv2d(1, 3, 3), torch.nn.ReLU(), torch.nn.Flatten(),
                               torch.nn.Linear(3 * 4 * 4, 4))


def _paper_optimizer(model: torch.nn.Module, variant: str = "ffd", lr: float = 0.05) -> AdaFD:
    """The paper's set-up: the sketch on the convolution, ADA-DIAG on the dense layer."""
    conv, dense = model[0], model[3]
    return AdaFD([{"params": conv.parameters()}, {"params": dense.parameters(), "variant": "diag"}],
                 lr=lr, variant=variant, tau=3)


def _batches(seed: int, n: int):
    generator = torch.Generator().manual_seed(seed)
    return [(torch.randn(5, 1, 6, 6, generator=generator), torch.randint(0, 4, (5,), generator=generator))
            for _ in range(n)]


def _train(model, optimizer, batches) -> list[float]:
    losses = []
    for x, y in batches:
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def _snapshot(model, optimizer) -> list:
    """Every parameter and every number of the optimizer's state, as numpy arrays."""
    values = [p.detach().numpy().copy() for p in model.parameters()]
    for entry in optimizer.state_dict()["state"].values():
        for key in sorted(entry):
            value = entry[key]
            values.append(value.numpy().copy() if isinstance(value, torch.Tensor) else value)
    return values


def _assert_same(first: list, second: list) -> None:
    assert len(first) == len(second)
    for a, b in zip(first, second):
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
        else:
            assert a == b


# -- the paper's update: equality with the linear learner ---------------------------------
@settings(max_examples=12, deadline=None)
@given(variant=st.sampled_from(["fd", "ffd", "full", "diag"]), tau=st.integers(2, 5),
       eta=st.sampled_from([1e-3, 0.1, 1.0]), delta=st.sampled_from([0.1, 1.0, 10.0]),
       d=st.integers(1, 9), seed=st.integers(0, 2 ** 16))
def test_steps_equal_the_linear_adagrad(variant, tau, eta, delta, d, seed):
    """On beta^T x with the absolute loss (Wan & Zhang's regression), autograd's gradient is
    ``sign(beta^T x - y) x``, the linear learner's ``g_t``: every step is bit-identical."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((40, d)) * rng.uniform(0.1, 3.0, d)
    y = X @ rng.standard_normal(d)
    learner = AdaGrad(d, variant=variant, method="cmd", tau=tau, eta=eta, delta=delta, loss="absolute")
    w = torch.zeros(d, dtype=torch.float64, requires_grad=True)
    optimizer = AdaFD([w], lr=eta, variant=variant, tau=tau, delta=delta)
    for x, target in zip(X, y):
        learner.learn(x, target)
        optimizer.zero_grad()
        (torch.from_numpy(x) @ w - target).abs().backward()
        optimizer.step()
        np.testing.assert_array_equal(w.detach().numpy(), learner.beta)
    state = optimizer.state[w]
    assert optimizer.ranks() == [learner.rank]
    assert (state["n_shrinks"], state["delta_total"]) == (learner.n_shrinks, learner.delta_total)


def test_diag_equals_torch_adagrad():
    """ADA-DIAG (``variant="diag"``, delta = eps) against torch's own Adagrad in float64."""
    ours, theirs = _small_cnn(1).double(), _small_cnn(1).double()
    optimizer = AdaFD(ours.parameters(), lr=0.1, variant="diag", delta=1e-10)
    oracle = torch.optim.Adagrad(theirs.parameters(), lr=0.1, eps=1e-10)
    for x, y in _batches(2, 10):
        for model, opt in ((ours, optimizer), (theirs, oracle)):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x.double()), y).backward()
            opt.step()
    for a, b in zip(ours.parameters(), theirs.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("variant", ["fd", "ffd"])
def test_cnn_training_lowers_the_loss_and_keeps_the_sketch_small(variant):
    model = _small_cnn(0)
    optimizer = _paper_optimizer(model, variant)
    batches = _batches(0, 5)
    losses = _train(model, optimizer, batches * 8)
    assert np.mean(losses[-5:]) < 0.5 * np.mean(losses[:5])
    conv_weight, conv_bias = optimizer.ranks()[:2]
    assert conv_weight <= (3 if variant == "fd" else 2 * 3 - 1) and conv_bias <= 3
    assert optimizer.state[model[0].weight]["n_shrinks"] > 0
    assert all(torch.isfinite(p).all() for p in model.parameters())


# -- persistence and determinism -------------------------------------------------------
@pytest.mark.blas_kernels
@pytest.mark.parametrize("variant", ["fd", "ffd"])
def test_save_load_resume_is_bit_identical(variant):
    batches = _batches(3, 12)
    model = _small_cnn(0)
    optimizer = _paper_optimizer(model, variant)
    _train(model, optimizer, batches)

    model = _small_cnn(0)
    optimizer = _paper_optimizer(model, variant)
    _train(model, optimizer, batches[:6])
    buffer = io.BytesIO()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, buffer)
    buffer.seek(0)
    saved = torch.load(buffer, weights_only=True)
    resumed = _small_cnn(5)  # other initial weights: the load must overwrite everything
    resumed.load_state_dict(saved["model"])
    resumed_optimizer = _paper_optimizer(resumed, variant, lr=0.5)  # lr comes from the state
    resumed_optimizer.load_state_dict(saved["optimizer"])
    assert resumed_optimizer.param_groups[0]["lr"] == 0.05
    _train(resumed, resumed_optimizer, batches[6:])

    reference = _small_cnn(0)
    reference_optimizer = _paper_optimizer(reference, variant)
    _train(reference, reference_optimizer, batches)
    _assert_same(_snapshot(resumed, resumed_optimizer), _snapshot(reference, reference_optimizer))


def test_state_dict_is_a_copy():
    model = _small_cnn(0)
    optimizer = _paper_optimizer(model)
    _train(model, optimizer, _batches(0, 3))
    saved = optimizer.state_dict()
    before = _snapshot(model, optimizer)
    copy = {index: {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in entry.items()}
            for index, entry in saved["state"].items()}
    optimizer.load_state_dict(saved)
    _train(model, optimizer, _batches(1, 3))
    for index, entry in saved["state"].items():
        for key, value in entry.items():
            if isinstance(value, torch.Tensor):
                assert torch.equal(value, copy[index][key]), key
    assert len(before) == len(_snapshot(model, optimizer))


@pytest.mark.blas_kernels
def test_determinism_by_seed():
    runs = []
    for _ in range(2):
        model = _small_cnn(7)
        optimizer = _paper_optimizer(model, "ffd")
        _train(model, optimizer, _batches(8, 8))
        runs.append(_snapshot(model, optimizer))
    _assert_same(*runs)


# -- refusals ----------------------------------------------------------------------------
@pytest.mark.parametrize("arguments, name", [
    ({"lr": 0.0}, "lr"), ({"lr": -1.0}, "lr"), ({"lr": float("nan")}, "lr"), ({"lr": "0.1"}, "lr"),
    ({"tau": 1}, "tau"), ({"tau": 2.5}, "tau"), ({"tau": True}, "tau"),
    ({"variant": "adam"}, "variant"), ({"delta": 0.0}, "delta"), ({"delta": float("inf")}, "delta"),
])
def test_bad_hyperparameters_are_refused(arguments, name):
    with pytest.raises(ValueError, match=name):
        AdaFD([torch.zeros(3, requires_grad=True)], **arguments)


def test_bad_group_and_tensors_are_refused():
    good = torch.zeros(3, requires_grad=True)
    optimizer = AdaFD([good], lr=0.1)
    with pytest.raises(ValueError, match="tau"):
        optimizer.add_param_group({"params": [torch.zeros(2, requires_grad=True)], "tau": 0})
    assert len(optimizer.param_groups) == 1 and len(optimizer.state) == 1
    with pytest.raises(ValueError, match="floating-point"):
        AdaFD([torch.zeros(3, dtype=torch.int64)])
    with pytest.raises(ValueError, match="matrix"):  # ADA-FULL's d x d past 1e8 entries
        AdaFD([torch.zeros(20_000, requires_grad=True)], variant="full")


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), 1e200])
def test_a_non_finite_gradient_is_refused_and_nothing_changes(bad):
    """NaN, inf, and (float64) a gradient whose squared norm overflows past 1e300."""
    model = _small_cnn(0).double()
    optimizer = _paper_optimizer(model)
    _train(model, optimizer, [(x.double(), y) for x, y in _batches(0, 4)])
    before = _snapshot(model, optimizer)
    optimizer.zero_grad()
    x, y = _batches(1, 1)[0]
    torch.nn.functional.cross_entropy(model(x.double()), y).backward()
    model[3].bias.grad[0] = bad  # the last tensor: every earlier one was checked already
    with pytest.raises(ValueError, match="nothing was updated"):
        optimizer.step()
    _assert_same(_snapshot(model, optimizer), before)


def test_a_diverging_step_is_rolled_back():
    """lr = 1e100 makes a float32 parameter overflow: Diverged, every sketch put back."""
    model = _small_cnn(0)
    optimizer = _paper_optimizer(model)
    _train(model, optimizer, _batches(0, 4))
    before = _snapshot(model, optimizer)
    for group in optimizer.param_groups:
        group["lr"] = 1e100
    optimizer.zero_grad()
    x, y = _batches(1, 1)[0]
    torch.nn.functional.cross_entropy(model(x), y).backward()
    with pytest.raises(Diverged, match="not finite"):
        optimizer.step()
    for group in optimizer.param_groups:
        group["lr"] = 0.05
    _assert_same(_snapshot(model, optimizer), before)


def test_a_zero_gradient_changes_nothing_and_makes_no_nan():
    model = _small_cnn(0)
    optimizer = _paper_optimizer(model)
    parameters = [p.detach().clone() for p in model.parameters()]
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    optimizer.step()
    for p, before in zip(model.parameters(), parameters):
        assert torch.equal(p, before)
    assert optimizer.ranks() == [0, 0, 0, 0]
    state = optimizer.state[model[0].weight]
    assert state["step"] == 1 and state["gradient_mass"] == 0.0
    _train(model, optimizer, _batches(0, 2))
    assert all(torch.isfinite(p).all() for p in model.parameters())


def test_a_tampered_state_is_refused_and_nothing_changes():
    model = _small_cnn(0)
    optimizer = _paper_optimizer(model)
    _train(model, optimizer, _batches(0, 4))
    before = _snapshot(model, optimizer)
    good = optimizer.state_dict()

    wrong_variant = optimizer.state_dict()
    wrong_variant["param_groups"][0]["variant"] = "fd"
    not_finite = optimizer.state_dict()
    not_finite["state"][0]["proximal.M"][0, 0] = float("nan")
    wrong_shape = optimizer.state_dict()
    wrong_shape["state"][0]["proximal.V"] = torch.zeros(3, 3, dtype=torch.float64)
    negative_mass = optimizer.state_dict()
    negative_mass["state"][1]["gradient_mass"] = -1.0
    bad_lr = optimizer.state_dict()
    bad_lr["param_groups"][1]["lr"] = 0.0
    for state, name in ((wrong_variant, "variant"), (not_finite, "M"), (wrong_shape, "V"),
                        (negative_mass, "gradient_mass"), (bad_lr, "lr")):
        with pytest.raises(ValueError, match=name):
            optimizer.load_state_dict(state)
        _assert_same(_snapshot(model, optimizer), before)
    optimizer.load_state_dict(good)
    _assert_same(_snapshot(model, optimizer), before)


def test_the_module_without_torch_names_the_extra():
    """``import explorer.adagrad`` needs no torch; this module says how to install it."""
    code = ("import sys; sys.modules['torch'] = None\n"
            "import explorer.adagrad\n"
            "try:\n"
            "    import explorer.adagrad.torch_optim\n"
            "except ModuleNotFoundError as error:\n"
            "    print(error)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'sketch-explorer[torch]'" in result.stdout


# -- all or nothing at step time: settings, exceptions, tensors ---------------------------
_BAD_SCALES = ["0.1", None, -1.0, 0.0, float("nan"), float("inf"), 1e200, True, [0.1],
               torch.tensor([0.1, 0.2]), torch.tensor(1), torch.tensor(True), torch.tensor(-0.1),
               torch.tensor(float("nan")), 10 ** 400]


def _two_groups(variant: str, seed: int):
    """Two float64 groups (the second one's tensors come last), trained a little, with a fresh
    gradient in place for the next step."""
    torch.manual_seed(seed)
    first, second = torch.nn.Linear(4, 3).double(), torch.nn.Linear(3, 1).double()
    optimizer = AdaFD([{"params": first.parameters()}, {"params": second.parameters()}],
                      lr=0.05, variant=variant, tau=2)
    model = torch.nn.Sequential(first, torch.nn.Tanh(), second)
    x, y = torch.randn(6, 4, dtype=torch.float64), torch.randn(6, 1, dtype=torch.float64)
    for _ in range(3):
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
    optimizer.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    return model, optimizer


@settings(max_examples=40, deadline=None)
@given(variant=st.sampled_from(["fd", "ffd", "diag", "full"]), key=st.sampled_from(["lr", "delta"]),
       bad=st.sampled_from(_BAD_SCALES), seed=st.integers(0, 2 ** 16))
def test_a_bad_lr_or_delta_at_step_time_is_refused_before_anything_changes(variant, key, bad, seed):
    """A group's lr or delta edited to a string, None, a non-positive or out-of-range number
    or a tensor that is not one float: a ``ValueError`` naming it, the sketches of the earlier
    group untouched, and the same step with good settings then takes the gradient once."""
    model, optimizer = _two_groups(variant, seed)
    before = _snapshot(model, optimizer)
    good = optimizer.param_groups[1][key]
    optimizer.param_groups[1][key] = bad
    with pytest.raises(ValueError, match=f"param group 1: {key}.*nothing was updated"):
        optimizer.step()
    optimizer.param_groups[1][key] = good
    _assert_same(_snapshot(model, optimizer), before)
    twin_model, twin = _two_groups(variant, seed)
    optimizer.step()
    twin.step()
    _assert_same(_snapshot(model, optimizer), _snapshot(twin_model, twin))


@pytest.mark.parametrize("variant", ["fd", "ffd", "diag", "full"])
def test_a_tensor_lr_counts_as_its_number(variant):
    """A 0-d tensor lr (what an LR scheduler keeps when given one) takes the float's steps,
    follows a scheduler's in-place updates, and survives a save and load."""
    model, optimizer = _two_groups(variant, 3)
    twin_model, twin = _two_groups(variant, 3)
    for group in optimizer.param_groups:
        group["lr"] = torch.tensor(0.05, dtype=torch.float64)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    optimizer.step()
    twin.step()
    _assert_same(_snapshot(model, optimizer), _snapshot(twin_model, twin))
    scheduler.step()
    assert isinstance(optimizer.param_groups[0]["lr"], torch.Tensor)
    assert optimizer.param_groups[0]["lr"].item() == 0.025
    buffer = io.BytesIO()
    torch.save(optimizer.state_dict(), buffer)
    buffer.seek(0)
    optimizer.load_state_dict(torch.load(buffer, weights_only=True))
    for group in twin.param_groups:
        group["lr"] = 0.025
    for opt, net in ((optimizer, model), (twin, twin_model)):
        opt.zero_grad()
        net(torch.ones(2, 4, dtype=torch.float64)).sum().backward()
        opt.step()
    _assert_same(_snapshot(model, optimizer), _snapshot(twin_model, twin))
    tensor_lr = AdaFD([torch.zeros(3, requires_grad=True)], lr=torch.tensor(0.1))
    assert tensor_lr.param_groups[0]["lr"].item() == pytest.approx(0.1)


@pytest.mark.parametrize("variant", ["fd", "ffd", "diag", "full"])
@pytest.mark.parametrize("error", [TypeError("boom"), KeyboardInterrupt(), MemoryError(), RuntimeError("x")])
def test_any_exception_midway_puts_every_sketch_back(variant, error, monkeypatch):
    """An exception of any kind while the last tensor's matrix absorbs its gradient (after the
    earlier ones did): it propagates, and every sketch and parameter is as before."""
    model, optimizer = _two_groups(variant, 5)
    before = _snapshot(model, optimizer)
    last = optimizer.state[optimizer.param_groups[1]["params"][-1]]["proximal"]

    def failing_solve(*args, **kwargs):
        raise error

    monkeypatch.setattr(last, "solve", failing_solve)
    with pytest.raises(type(error)):
        optimizer.step()
    monkeypatch.undo()
    _assert_same(_snapshot(model, optimizer), before)


def test_empty_and_repeated_tensors_are_refused():
    """A 0-element tensor (no BLAS error), a tensor listed twice in a group or in two groups,
    or one slipped into ``param_groups`` afterwards: a ``ValueError`` saying what is allowed."""
    a, b = torch.zeros(3, requires_grad=True), torch.zeros(2, requires_grad=True)
    for variant in ("fd", "ffd", "diag", "full"):
        with pytest.raises(ValueError, match="at least one entry"):
            AdaFD([a, torch.zeros(0, requires_grad=True)], variant=variant)
    with pytest.raises(ValueError, match="listed twice"):
        AdaFD([a, b, a])
    with pytest.raises(ValueError, match="listed twice"):
        AdaFD([{"params": [a]}, {"params": [b, a]}])
    with pytest.raises(ValueError, match="not a set"):
        AdaFD([{"params": {a, b}}])
    optimizer = AdaFD([a, b], lr=0.1, tau=2)
    a.grad, b.grad = torch.ones(3), torch.ones(2)
    before = _snapshot(torch.nn.ParameterList([a, b]), optimizer)
    optimizer.param_groups[0]["params"].append(a)
    with pytest.raises(ValueError, match="listed twice.*nothing was updated"):
        optimizer.step()
    optimizer.param_groups[0]["params"][-1] = torch.zeros(4, requires_grad=True)
    optimizer.param_groups[0]["params"][-1].grad = torch.ones(4)
    with pytest.raises(ValueError, match="not added through the optimizer"):
        optimizer.step()
    optimizer.param_groups[0]["params"].pop()
    assert optimizer.ranks() == [0, 0]
    _assert_same(_snapshot(torch.nn.ParameterList([a, b]), optimizer), before)
