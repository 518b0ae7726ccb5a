"""The several-steps mapping's compiled node passes (coefficients/step_kernels.py) against
independent numpy / scipy computations of the same quantities, and the refused pieces' halves
of xi_lines.on_pieces against the rule itself (docs/THEORY.md §12.4)."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.coefficients import step_kernels as sk
from asymptotics.multiindex import steps, xi_lines
from asymptotics.spiked.problem import resolve_target


@pytest.mark.parametrize("text", ["z1 + z1*z2 + z1*z2*z3", "z1 + z1*z2", "z1 + 0.5*z1**2"])
def test_polynomial_residuals_are_numpys(text: str) -> None:
    """The compiled residuals give the numpy evaluation's sums bitwise (the same operations)."""
    g, k, _ = resolve_target(text)
    per = steps.mapping_inputs("tanh", text, steps=1, alpha0=4.0, eta=1.0, delta=0.0,
                               readout="pm1", quad=steps.Quadrature()).per
    poly = sk.polynomial(text, k, per)
    assert poly is not None
    rng = np.random.default_rng(5)
    Uz, RzT = rng.normal(0, 3, (k, 5000)), rng.normal(0, 1, (k, 24))
    W, wr, f = rng.random((24, 1 + k)), rng.random(24), rng.normal(0, 1, 5000)
    fast = sk.rest_sums(g, steps.evaluate, poly, Uz, RzT, W, wr, f, 0.25, 4096)
    slow = sk.rest_sums(g, steps.evaluate, None, Uz, RzT, W, wr, f, 0.25, 4096)
    for x, y in zip(fast, slow, strict=True):
        np.testing.assert_array_equal(x, y)


def test_polynomial_refuses_other_targets() -> None:
    assert sk.polynomial("z1*z2 + tanh(z1)", 2, (1, None)) is None
    assert sk.polynomial("relu", 1, None) is None


def test_node_sums_match_numpys_products() -> None:
    rng = np.random.default_rng(6)
    n, r, K, m = 40_000, 3, 3, 2
    U, wu = rng.normal(size=(n, r)), rng.random(n) / n
    m1, m2, v = rng.random((n, K)), rng.normal(size=(n, K)), rng.random((n, K))
    e0, e1, e2 = rng.normal(size=n), rng.normal(size=(n, m)), rng.random(n)
    flat = sk._node_sums(U, wu, m1, m2, v, e0, e1, e2, np.zeros(0, np.int64))  # all rows
    A, B, em2, nv, mm = np.split(flat, np.cumsum([K * r, K * m, K, K]))
    wrapped = sk.node_sums(U, wu, m1, m2, v, e0, e1, e2)  # None until compiled
    if wrapped is not None:
        np.testing.assert_array_equal(np.concatenate([x.ravel() for x in wrapped]), flat)
    wm1 = (wu * e0)[:, None] * m1
    for x, y in ((A, wm1.T @ U), (B, (wu[:, None] * m1).T @ e1), (em2, (wu * e0) @ m2),
                 (nv, (wu * e2) @ v), (mm, (m1 * (wu * e2)[:, None]).T @ m1)):
        assert np.max(np.abs(np.reshape(x, np.shape(y)) - y)) <= 1e-13 * np.max(np.abs(y))


@pytest.mark.parametrize(("r", "h"), [(1, 0.04), (2, 0.08), (3, 0.25)])
def test_product_nodes_are_the_outer_products(r: int, h: float) -> None:
    x = np.arange(-steps.U_MAX, steps.U_MAX + h / 2, h)
    w = np.exp(-0.5 * x * x)
    w /= w.sum()
    pts, kept = sk.product_nodes(x, w, r, 1e-18)
    wts = w
    for _ in range(r - 1):
        wts = np.multiply.outer(wts, w)
    on = wts > 1e-18 * wts.max()
    ref = np.stack([np.broadcast_to(x.reshape((-1,) + (1,) * (r - 1 - j)), wts.shape)[on]
                    for j in range(r)], axis=-1)
    np.testing.assert_array_equal(pts, ref)
    np.testing.assert_array_equal(kept, wts[on])


def test_refused_pieces_take_their_halves() -> None:
    """A feature of width 0.3 refuses pieces of half-length 1; their halves pass: the rule is
    evaluated at the pieces' points only, and the values are the rule's to 1e-13."""
    calls = []

    def direct(t: np.ndarray) -> np.ndarray:
        calls.append(len(t))
        return np.column_stack([np.exp(-0.5 * (t / 0.3) ** 2), np.tanh(t / 0.3),
                                np.exp(-0.5 * ((t - 3.0) / 0.3) ** 2)])

    t = np.linspace(-4.9, 4.9, 20001)
    out = xi_lines.on_pieces(direct, t, 1.0, None)
    n_direct = sum(calls)
    ref = direct(t)
    assert np.max(np.abs(out - ref)) <= 1e-13
    assert n_direct < 1000  # 6 pieces and the refused ones' halves, not the 20001 points
    assert n_direct > 6 * (xi_lines.M_CHEB + len(xi_lines.CHECKS))  # some piece was refused
