"""A target on the steps' grid of spike and rest values (``targets.grid_target``, docs/THEORY.md
§12.4): each sub-expression that calls a function, evaluated once on its variables' distinct
values and gathered, gives the plain evaluation's numbers bit for bit, and the other-axes sums
(``step_kernels.rest_sums``) are the plain ones."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.coefficients import step_kernels as sk
from asymptotics.coefficients.targets import grid_target
from asymptotics.multiindex import steps
from asymptotics.spiked.problem import resolve_target

TARGETS = ("z1*z2 + tanh(z1)", "tanh", "relu", "sin", "erf", "exp(-z1**2/2)*sin(z2) + z2",
           "z2*erf(z1 - 1) + 1/(1 + z2**2)", "relu(z1)*z2 + sigmoid(z2)",
           "tanh(z1) + tanh(z2) + z1*z2*z3", "cos(z1 + z2) + log(1 + z3**2)", "-tanh(z1)",
           "sign(z1)*abs(z2) - sqrt(1 + z1**2)", "tanh(z1*z2) + z3", "He3(z1) + sinh(z2)/10")


def _grid(k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Spike values with few distinct entries per variable (zeros of both signs among them) and
    rest values likewise, as a lattice and a product rule give them."""
    rng = np.random.default_rng(seed)
    ax = rng.standard_normal((k, 9))
    ax[:, 0], ax[0, 1] = 0.0, -0.0
    Uz = ax[np.arange(k)[:, None], rng.integers(0, 9, (k, 700))]
    rv = rng.standard_normal((k, 6))
    rv[:, 0] = -0.0
    RzT = rv[np.arange(k)[:, None], rng.integers(0, 6, (k, 90))]
    return np.ascontiguousarray(Uz), np.ascontiguousarray(RzT)


@pytest.mark.parametrize("text", TARGETS)
def test_grid_target_is_the_plain_evaluation_bit_for_bit(text: str) -> None:
    g, k, _ = resolve_target(text)
    Uz, RzT = _grid(k, len(text))
    block = grid_target(g, Uz, RzT)
    assert block is not None  # every term here has few distinct values: tabled
    for sl in (slice(0, 700), slice(5, 333), slice(650, 800)):
        plain = steps.evaluate(g, np.moveaxis(np.add(Uz[:, sl, None], RzT[:, None, :]), 0, -1))
        got = block(sl)
        assert got.shape == plain.shape and got.flags.c_contiguous
        assert np.array_equal(got.view(np.int64), plain.view(np.int64))


def test_grid_target_declines_what_it_cannot_gain() -> None:
    g, k, _ = resolve_target("z1*z2 + tanh(z1)")
    rng = np.random.default_rng(3)
    Uz, RzT = rng.standard_normal((k, 700)), rng.standard_normal((k, 90))  # all distinct
    assert grid_target(g, Uz, RzT) is None
    assert grid_target(g, *_grid(k, 1)[:1], RzT[:, :3]) is None  # a small block
    g3, _, _ = resolve_target("z1 + z1*z2")  # no function called: nothing to table
    assert grid_target(g3, *_grid(2, 2)) is None


@pytest.mark.parametrize("text", ("z1*z2 + tanh(z1)", "tanh", "relu(z1)*z2 + sigmoid(z2)"))
def test_rest_sums_on_the_grid_are_the_plain_sums(text: str, monkeypatch) -> None:
    g, k, _ = resolve_target(text)
    Uz, RzT = _grid(k, 7)
    rng = np.random.default_rng(5)
    wr = rng.uniform(0.1, 1.0, RzT.shape[1])
    W = np.column_stack([wr, wr[:, None] * rng.standard_normal((RzT.shape[1], 2))])
    f = rng.standard_normal(Uz.shape[1])
    got = sk.rest_sums(g, steps.evaluate, None, Uz, RzT, W, wr, f, 0.25, 4096)
    monkeypatch.setattr(sk, "grid_target", lambda *a: None)
    plain = sk.rest_sums(g, steps.evaluate, None, Uz, RzT, W, wr, f, 0.25, 4096)
    for a, b in zip(got, plain, strict=True):
        assert np.array_equal(a, b)
