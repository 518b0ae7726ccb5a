"""The compiled passes of relu's closed forms on large lattices (``step_kernels.relu_moments``,
``relu_rest``) against scipy's ``ndtr`` and the numpy path, the product rule's kernel against
numpy's outer products, and the opt-in graded rule for relu's sigma and target
(``graded.RELU_TARGET_GRADED``) against a finer default lattice."""

import math

import numpy as np
import pytest
from scipy.special import ndtr

import asymptotics as A
from asymptotics.coefficients import step_kernels, step_quadrature
from asymptotics.multiindex import graded, steps

EDGES = [0.0, -0.0, 1.0, -1.0, math.sqrt(2.0) * 0.70710678118654752440, 8.5, -8.5, 8.49999,
         -38.5, -38.49999, 40.0, -40.0, 1e-310, -1e-310, np.inf, -np.inf, 1e-8, -37.0]


def numpy_path(monkeypatch, fn, *args):
    monkeypatch.setattr(step_quadrature, "FUSED_RELU", 10**18)
    with np.errstate(invalid="ignore"):  # inf * 0 at the edges: NaN on both paths
        out = fn(*args)
    monkeypatch.undo()
    return out


@pytest.mark.parametrize("K", [1, 3, 4])
def test_relu_moments_kernels_equal_the_numpy_path(monkeypatch, K):
    """Bit for bit, Phi equal to scipy's ndtr (erf and erfc on its branches)."""
    rng = np.random.default_rng(11 + K)
    M = rng.normal(size=(20_000, K)) * rng.uniform(1.0, 20.0, K)
    M[:len(EDGES)] = np.array(EDGES)[:, None]
    rep = rng.uniform(0.05, 3.0, K)
    rep[0] = 1.0  # the edge values are x themselves in the first column
    fast = step_kernels.relu_moments(M, rep)
    assert fast is not None
    np.testing.assert_array_equal(fast[1], ndtr(M / rep))
    ref = numpy_path(monkeypatch, step_quadrature.relu_moments, M, rep, 0.0)
    for a, b in zip(fast, ref, strict=True):
        np.testing.assert_array_equal(a, b)


def test_relu_rest_kernels_equal_the_numpy_path(monkeypatch):
    rng = np.random.default_rng(5)
    a = np.concatenate([np.array(EDGES) * 0.3, rng.normal(size=30_000) * 6.0])
    f = rng.normal(size=a.shape[0])
    fast = step_kernels.relu_rest(a, 0.3, f, 0.25)
    ref = numpy_path(monkeypatch, step_quadrature.relu_rest_sums, a, 0.3, f, 0.25)
    assert fast is not None
    for x, y in zip(fast, ref, strict=True):
        np.testing.assert_array_equal(x, y)


def test_ndtr_saturates_beyond_the_kernels_ends():
    """The kernels set Phi = 1 from X_ONE on and 0 up to X_ZERO without calling erfc."""
    hi = np.linspace(step_kernels.X_ONE, 60.0, 200_001)
    lo = np.linspace(-80.0, step_kernels.X_ZERO, 200_001)
    assert np.all(ndtr(hi) == 1.0) and np.all(ndtr(lo) == 0.0)


def test_interpreted_kernels_equal_the_compiled():
    """The kernels' Python sources (the cold start runs them) give the same numbers."""
    rng = np.random.default_rng(2)
    M = rng.normal(size=(200, 3)) * 12.0
    M[:len(EDGES)] = np.array(EDGES)[:, None]
    rep = np.array([1.0, 0.4, 2.5])
    outs = []
    for run in (step_kernels._relu_args, step_kernels._relu_args.py_func):
        x, t, Y = np.empty_like(M), np.empty_like(M), np.empty_like(M)
        outs.append((run(M, rep, x, t, Y), x, t, Y))
    assert outs[0][0] == outs[1][0]
    for a, b in zip(outs[0][1:], outs[1][1:], strict=True):
        np.testing.assert_array_equal(a, b)
    x, ns = outs[0][1], outs[0][0]
    for a, b in zip(step_kernels._relu_small(x, ns), step_kernels._relu_small.py_func(x, ns),
                    strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("r,h", [(1, 0.04), (2, 0.08), (3, 0.2), (3, 0.5)])
def test_product_nodes_equal_numpy_outer_products(r, h):
    x = np.arange(-9.0, 9.0 + h / 2, h)
    w = np.exp(-0.5 * x * x)
    w /= w.sum()
    wts = w
    for _ in range(r - 1):
        wts = np.multiply.outer(wts, w)
    on = wts > 1e-18 * wts.max()
    grids = np.meshgrid(*([x] * r), indexing="ij")
    pts, kept = step_kernels.product_nodes(x, w, r, 1e-18)
    np.testing.assert_array_equal(kept, wts[on])
    np.testing.assert_array_equal(pts, np.stack([g[on] for g in grids], axis=-1))


def last_state(monkeypatch, kw: dict, *, graded_rule: bool, fine: bool = False) -> tuple:
    monkeypatch.setattr(graded, "RELU_TARGET_GRADED", graded_rule)
    if fine:
        for r, h in ((1, 0.02), (2, 0.04), (3, 0.12)):
            monkeypatch.setitem(steps.TRAPEZOID_STEP, r, h)
    steps.clear_cache()
    s = A.steps_mapping("relu", "relu", steps=3, **kw).states[-1]
    monkeypatch.undo()
    steps.clear_cache()
    return s.a, s.L @ s.L.T, s.c


def rel(x: tuple, y: tuple) -> float:
    return max(float(np.max(np.abs(a - b)) / np.max(np.abs(a))) for a, b in zip(x, y,
                                                                              strict=True))


def test_relu_target_graded_rule_agrees_with_a_finer_lattice(monkeypatch):
    """relu's sigma and target, three readout values: the opt-in graded rule (the kink as one
    more group) against the default lattice at about 0.6 of its steps (~1.8e6 nodes); the
    default lattice itself is further off on this setting (3e-10)."""
    kw = dict(alpha0=16.0, eta=(5.96, 6.64, 14.68), readout={1.0: 0.43, -1.0: 0.43, -0.69: 0.14})
    fine = last_state(monkeypatch, kw, graded_rule=False, fine=True)
    new = last_state(monkeypatch, kw, graded_rule=True)
    assert rel(fine, new) <= 1e-10
    assert graded.RELU_TARGET_GRADED is True


@pytest.mark.parametrize("sigma", ["erf", "erf(z-1)", "relu"])
def test_closed_moments_equal_the_per_group_path(monkeypatch, sigma):
    """xi_moments with every group closed on (n, K) at once against its loop over groups (two
    groups of one bulk share an evaluation on both paths)."""
    from asymptotics.coefficients.functions import get_function
    from asymptotics.multiindex import xi_lines

    rng = np.random.default_rng(3)
    c = np.array([0.7, 0.7, 2.3, 0.05])
    M = rng.normal(size=(6000, 4)) * 7.0
    s, xi, wxi = get_function(sigma), np.zeros(1), np.ones(1)
    rules = [xi_lines.CLOSED] * 4
    fast = xi_lines.xi_moments(s, c, M, xi, wxi, rules)
    monkeypatch.setattr(xi_lines, "FAST_RELU", False)
    plain = xi_lines.xi_moments(s, c, M, xi, wxi, rules)
    for a, b in zip(fast, plain, strict=True):
        np.testing.assert_array_equal(a, b)
