"""The rows' xi moments of relu by tail sums (asymptotics/network/compiled/kinked.py) against
the direct sums over every node (numpy, an independent implementation of the same rule), and
against the Gaussian closed forms of relu' = 1{z > 0} on a fine rule."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from asymptotics.coefficients.functions import get_function
from asymptotics.network import rowvar
from asymptotics.network.compiled.kinked import KEYS, relu_moments


def _rule(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    xi = np.linspace(-rowvar.XI_HALF, rowvar.XI_HALF, nodes)
    w = np.exp(-xi**2 / 2)
    return xi, w / w.sum()


def _direct(m, sc, xi, w) -> np.ndarray:
    f, d1 = get_function("relu").value_and_derivative(m[:, None] + sc * xi[None, :])
    m1 = d1 @ w
    a = d1 - m1[:, None]
    return np.column_stack([f @ w, m1, d1 @ (w * xi), d1 @ (w * xi**2), d1 @ (w * xi**3),
                            (d1**2) @ w, (d1**2) @ (w * xi), (d1**2) @ (w * xi**2),
                            (a**3) @ w, (a**3) @ (w * xi), (a**4) @ w])


@pytest.mark.parametrize("nodes", [401, 4001])
@pytest.mark.parametrize("sc", [0.05, 0.9, 3.0])
def test_tail_sums_are_the_direct_sums(nodes, sc):
    rng = np.random.default_rng(nodes)
    xi, w = _rule(nodes)
    # shifts on nodes' kinks exactly (m = -fl(sc xi_j)), far out, and random
    m = np.concatenate([rng.normal(0.0, 3.0, 200), -sc * xi[::97], [0.0, 40.0, -40.0]])
    fast, ref = relu_moments(m, sc, xi, w), _direct(m, sc, xi, w)
    scale = np.max(np.abs(ref), axis=0)
    assert np.all(np.abs(fast - ref) <= 1e-13 * scale)


def test_closed_forms():
    xi, w = _rule(40001)
    m, sc = np.array([-1.3, 0.0, 0.4, 2.2]), 0.8
    t = -m / sc
    p, phi = norm.sf(t), norm.pdf(t)
    got = dict(zip(KEYS, relu_moments(m, sc, xi, w).T, strict=True))
    closed = {"F": m * p + sc * phi, "m1": p, "m2": phi, "ex2": t * phi + p,
              "ex3": (t * t + 2.0) * phi, "a3": p * (1 - p) * (1 - 2 * p),
              "a3x": phi * ((1 - p) ** 3 + p**3), "a4": p * (1 - p) * ((1 - p) ** 3 + p**3)}
    for k, v in closed.items():  # the rule's first-order error at the kink: ~1e-4
        assert np.allclose(got[k], v, atol=3e-4, rtol=0), k


def test_rowvar_takes_it_for_relu_only():
    relu, tanh = get_function("relu"), get_function("tanh")
    m = np.linspace(-3.0, 3.0, 7)
    out = rowvar._xi_direct(relu, 0.7, m)
    xi, w = _rule(rowvar.XI_NODES_KINK)
    ref = _direct(m, 0.7, xi, w)
    for i, k in enumerate(KEYS):
        assert np.allclose(out[k], ref[:, i], rtol=0, atol=1e-13 * np.max(np.abs(ref[:, i])))
    assert set(rowvar._xi_direct(tanh, 0.7, m)) == set(KEYS)
