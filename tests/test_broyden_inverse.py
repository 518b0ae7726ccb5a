"""``spectra.law.broyden_inverse``: Broyden's ("good") rank-one update of a stack of inverse
Jacobians, checked by its defining property (the secant condition ``H_new y = dx``), by the
rank-one identity ``H_new - H = (dx - H y) dx^T H / (dx^T H y)`` row by row against a plain
loop, and by the rows it must leave alone."""

from __future__ import annotations

import numpy as np

from asymptotics.spectra.law import broyden_inverse


def _stack(rng: np.random.Generator, n: int, q: int) -> tuple:
    H = rng.standard_normal((n, q, q)) + 1j * rng.standard_normal((n, q, q))
    dx = rng.standard_normal((n, q)) + 1j * rng.standard_normal((n, q))
    y = rng.standard_normal((n, q)) + 1j * rng.standard_normal((n, q))
    return H, dx, y


def test_secant_condition_and_plain_loop() -> None:
    rng = np.random.default_rng(5)
    H, dx, y = _stack(rng, 40, 4)
    new = broyden_inverse(H, dx, y, np.ones(40, dtype=bool))
    assert np.allclose(np.einsum("xij,xj->xi", new, y), dx, rtol=1e-10, atol=1e-12)
    for i in range(40):
        Hy = H[i] @ y[i]
        ref = H[i] + np.outer(dx[i] - Hy, dx[i] @ H[i]) / (dx[i] @ Hy)
        assert np.allclose(new[i], ref, rtol=1e-12, atol=1e-14)


def test_rows_left_alone() -> None:
    rng = np.random.default_rng(6)
    H, dx, y = _stack(rng, 5, 3)
    y[1] = np.nan                       # a non-finite change: `finite` False for that row
    dx[2] = 0.0                         # a zero denominator
    H[3] = np.nan                       # a non-finite denominator
    finite = np.all(np.isfinite(y), axis=1)
    new = broyden_inverse(H, dx, np.nan_to_num(y), finite)
    assert np.array_equal(new[1], H[1])
    assert np.array_equal(new[2], H[2])
    assert np.all(np.isnan(new[3]))
    assert not np.allclose(new[0], H[0]) and not np.allclose(new[4], H[4])
    # a floor above the row's denominator keeps it too
    den = abs(dx[0] @ (H[0] @ y[0]))
    kept = broyden_inverse(H[:1], dx[:1], y[:1], np.ones(1, dtype=bool), floor=2.0 * den)
    assert np.array_equal(kept[0], H[0])
