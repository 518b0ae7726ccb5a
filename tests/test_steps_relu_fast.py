"""relu's xi-moments with every group in closed form on all shifts at once
(``step_quadrature.relu_moments``) against the plain per-group path (``xi_lines.relu_closed``
per group, then v = E sigma'^2 - m1^2 clipped at 0), and a whole mapping with and without it."""

import numpy as np
import pytest

import asymptotics as A
from asymptotics.coefficients import step_quadrature
from asymptotics.coefficients.functions import get_function
from asymptotics.multiindex import steps, xi_lines


def plain(c: np.ndarray, M: np.ndarray) -> tuple[np.ndarray, ...]:
    cols = [xi_lines.relu_closed(float(np.sqrt(cg)), M[:, g]) for g, cg in enumerate(c)]
    F, m1, m2, E2 = (np.stack([col[:, j] for col in cols], axis=1) for j in range(4))
    return F, m1, m2, np.maximum(E2 - m1 * m1, 0.0)


@pytest.mark.parametrize("c", [np.array([0.3, 1.7, 4.0]), np.array([2.0, 2.0, 0.05]),
                               np.array([1.3])])
def test_relu_fast_is_the_plain_path(c):
    rng = np.random.default_rng(7)
    M = rng.normal(size=(5000, len(c))) * 9.0
    M[:10] = [[-40.0], [40.0], [0.0], [-1e-300], [8.5], [-8.5], [1e-8], [-37.0], [38.0], [3.0]]
    sigma = get_function("relu")
    xi, wxi = np.zeros(1), np.ones(1)  # unused by the closed forms
    fast = xi_lines.xi_moments(sigma, c, M, xi, wxi, [xi_lines.CLOSED] * len(c))
    for a, b in zip(fast, plain(c, M), strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-300)


def test_relu_fast_shares_a_bulk_scale_as_the_plain_path():
    """Groups whose scales agree to SAME_SCALE are evaluated at the first one's scale."""
    c = np.array([1.0, 1.0 * (1 + 1e-15) ** 2, 2.0])
    M = np.random.default_rng(3).normal(size=(100, 3)) * 5.0
    F, m1, m2, v = step_quadrature.relu_moments(M, np.sqrt(c), xi_lines.SAME_SCALE)
    sc0 = float(np.sqrt(c[0]))
    ref = xi_lines.relu_closed(sc0, M[:, 1])
    np.testing.assert_array_equal(F[:, 1], ref[:, 0])
    np.testing.assert_array_equal(m2[:, 1], ref[:, 2])


def states(kw: dict) -> list:
    steps.clear_cache()
    m = A.steps_mapping("relu", "relu", steps=3, **kw)
    return [(s.a, s.L @ s.L.T, s.c) for s in m.states]


def test_relu_mapping_same_with_and_without_the_fast_path(monkeypatch):
    """A relu/relu mapping with a three-valued readout on the default lattice (~4e5 nodes)."""
    kw = dict(alpha0=4.0, eta=(5.1, 12.7, 6.9), readout={1.0: 0.17, -1.0: 0.49, -0.72: 0.34})
    calls = []
    real = step_quadrature.relu_moments
    monkeypatch.setattr(step_quadrature, "relu_moments",
                        lambda *a: calls.append(a[0].shape) or real(*a))
    fast = states(kw)
    assert any(n >= 10_000 for n, _ in calls)  # the fast path ran on the large lattice
    monkeypatch.setattr(xi_lines, "FAST_RELU", False)
    slow = states(kw)
    for sf, ss in zip(fast, slow, strict=True):
        for a, b in zip(sf, ss, strict=True):
            assert np.max(np.abs(a - b)) <= 1e-12 * max(np.max(np.abs(b)), 1e-300)
