"""The piecewise Clenshaw kernel against an independent numpy evaluation of the same recurrence
(elementwise ops in the same order: the same numbers bit for bit), and against numpy's own
Chebyshev series (numpy.polynomial.chebyshev.chebval) to rounding."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.coefficients.line_moments import _clenshaw


def numpy_clenshaw(coef: np.ndarray, lo: float, h: float, t: np.ndarray) -> np.ndarray:
    """The recurrence b_j = c_j + 2 x b_{j+1} - b_{j+2}, f = c_0 + x b_1 - b_2, vectorised over
    the points (numpy's elementwise operations, no fused multiply-add)."""
    n_pieces, m, q = coef.shape
    p = np.minimum(((t - lo) / (2.0 * h)).astype(np.int64), n_pieces - 1)
    x = np.minimum(np.maximum((t - (lo + h * (2 * p + 1))) / h, -1.0), 1.0)
    b1 = np.zeros((t.shape[0], q))
    b2 = np.zeros((t.shape[0], q))
    for j in range(m - 1, 0, -1):
        b1, b2 = coef[p, j, :] + (2.0 * x)[:, None] * b1 - b2, b1
    return coef[p, 0, :] + x[:, None] * b1 - b2


@pytest.mark.parametrize("q", [1, 2, 3, 4])
@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 7, 8, 401])
def test_clenshaw_bit_for_bit(q: int, n: int) -> None:
    rng = np.random.default_rng(100 * q + n)
    n_pieces, m, h = 5, 32, 0.7
    lo = -2.0 * h * 2
    coef = rng.standard_normal((n_pieces, m, q)) / (1.0 + np.arange(m))[None, :, None] ** 2
    t = rng.uniform(lo, lo + 2 * h * n_pieces, n)
    if n > 8:  # the pieces' ends, points unsorted and repeated
        t[:n_pieces + 1] = lo + 2 * h * np.arange(n_pieces + 1)
        t[-3:] = t[5]
    got = _clenshaw(coef, lo, h, t)
    want = numpy_clenshaw(coef, lo, h, t)
    assert got.shape == (n, q)
    assert np.array_equal(got, want)


def test_clenshaw_is_the_chebyshev_series() -> None:
    rng = np.random.default_rng(7)
    n_pieces, m, h, lo = 3, 12, 0.5, 1.0
    coef = rng.standard_normal((n_pieces, m, 3))
    t = rng.uniform(lo, lo + 2 * h * n_pieces, 50)
    got = _clenshaw(coef, lo, h, t)
    p = np.minimum(((t - lo) / (2 * h)).astype(int), n_pieces - 1)
    x = (t - (lo + h * (2 * p + 1))) / h
    for c in range(3):
        want = [np.polynomial.chebyshev.chebval(x[i], coef[p[i], :, c]) for i in range(50)]
        assert np.allclose(got[:, c], want, rtol=1e-13, atol=1e-13)
