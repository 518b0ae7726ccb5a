"""The xi-moments' series summed straight into their (n, K) arrays
(``compiled.clenshaw.moments_into``, ``xi_lines._into``) against the path through an (n, 4)
array per group and its copies (``chebyshev_pieces``, ``on_pieces``): the same numbers bit for
bit (docs/THEORY.md §12.4)."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.coefficients.functions import get_function
from asymptotics.coefficients.gauss_rules import gauss_hermite
from asymptotics.multiindex import xi_lines
from asymptotics.multiindex.compiled.clenshaw import chebyshev_pieces, moments_into


@pytest.mark.parametrize("n", [0, 1, 5, 64, 65, 700, 9000])  # 9000: blocks of MOMENT_ROWS
def test_moments_into_is_chebyshev_pieces_bit_for_bit(n: int) -> None:
    rng = np.random.default_rng(n)
    n_pieces, m, h, K = 6, 20, 0.8, 3
    lo = -2.0 * h * 3
    mp = rng.integers(2, m + 1, n_pieces)
    coef = rng.standard_normal((n_pieces, m, 4)) / (1.0 + np.arange(m))[None, :, None]
    coef[np.arange(m)[None, :] >= mp[:, None]] = 0.0
    M = rng.uniform(lo - 1.0, lo + 2 * h * n_pieces + 1.0, (n, K))  # beyond the ends too
    M[:min(n, 3), 1] = lo + 2 * h * np.arange(min(n, 3))  # the pieces' ends
    F, out = np.full((n, K), np.nan), np.full((3, n, K), np.nan)
    moments_into(coef, mp.astype(np.int64), lo, h, M, np.array([0, 2]), F, out[0], out[1],
                 out[2])
    for g in (0, 2):
        want = chebyshev_pieces(coef, lo, h, np.ascontiguousarray(M[:, g]), mp)
        v = want[:, 3] - want[:, 1] * want[:, 1]
        assert np.array_equal(F[:, g], want[:, 0])
        assert np.array_equal(out[0, :, g], want[:, 1])
        assert np.array_equal(out[1, :, g], want[:, 2])
        assert np.array_equal(out[2, :, g], np.maximum(v, 0.0))
    assert np.all(np.isnan(F[:, 1])) and np.all(np.isnan(out[:, :, 1]))  # other groups untouched


@pytest.mark.parametrize("tol", [xi_lines.TOL, 1e-17])  # 1e-17: every piece refused (halves)
def test_xi_moments_into_as_on_pieces(monkeypatch: pytest.MonkeyPatch, tol: float) -> None:
    sigma = get_function("softplus")
    xi, wxi = gauss_hermite(96)
    rng = np.random.default_rng(3)
    U = rng.standard_normal((3000, 2)) * 3.0
    M = U @ np.array([[2.0, 0.5], [-1.0, 3.0], [2.0, 0.5]]).T  # groups 0, 2 share their bulk
    c = np.array([1.7, 0.8, 1.7])
    monkeypatch.setattr(xi_lines, "TOL", tol)
    xi_lines.clear_cache()
    got = xi_lines.xi_moments(sigma, c, M, xi, wxi)
    monkeypatch.setattr(xi_lines, "_into", lambda *a: False)
    xi_lines.clear_cache()
    want = xi_lines.xi_moments(sigma, c, M, xi, wxi)
    xi_lines.clear_cache()
    for a, b in zip(got, want, strict=True):
        assert np.array_equal(a, b)


def test_node_sums_on_rows_is_on_the_rows_taken() -> None:
    """A sub-rule's sums from its rows of the node arrays (``idx``, no copies) are those of the
    rows taken, bit for bit (``step_kernels.node_sums``; ``steps.advance``'s checks)."""
    from asymptotics.coefficients import step_kernels

    rng = np.random.default_rng(5)
    n, r, K, m = 1000, 3, 3, 2
    U, m1, m2, v = (rng.standard_normal((n, d)) for d in (r, K, K, K))
    e0, e2, e1 = rng.standard_normal(n), rng.random(n), rng.standard_normal((n, m))
    idx = np.flatnonzero(rng.random(n) < 0.4)
    w = rng.random(len(idx))
    # the kernel itself (the wrapper answers None while it is not compiled, e.g. while another
    # process holds the compile lock under load)
    got = step_kernels._node_sums(U, w, m1, m2, v, e0, e1, e2, idx.astype(np.int64))
    want = step_kernels._node_sums(*(x[idx] if x is not w else w for x in (U, w, m1, m2, v, e0,
                                                                           e1, e2)),
                                   np.zeros(0, np.int64))
    for a, b in zip(got, want, strict=True):
        assert np.array_equal(a, b)
