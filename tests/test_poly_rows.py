"""A polynomial target's residuals with many spike nodes per pass
(``multiindex.compiled.poly_rows.poly_e_rows``) against one node at a time
(``coefficients.step_kernels.poly_e``, the path before), bit for bit (docs/THEORY.md §12.4)."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.coefficients import step_kernels as sk
from asymptotics.multiindex import steps
from asymptotics.multiindex.compiled.poly_rows import BLOCK, FEW, poly_e_rows


@pytest.mark.parametrize("text", ["z1 + z1*z2 + z1*z2*z3", "z1 + z1*z2", "z1 + 0.5*z1**2",
                                  "z1**3 - 2*z2**2 + 0.25"])
@pytest.mark.parametrize("nr", [1, 2, 3, FEW - 1, FEW, 24])
def test_rows_side_by_side_are_poly_e(text: str, nr: int) -> None:
    k = 3 if "z3" in text else (2 if "z2" in text else 1)
    per = steps.mapping_inputs("tanh", text, steps=1, alpha0=4.0, eta=1.0, delta=0.0,
                               readout="pm1", quad=steps.Quadrature()).per
    poly = sk.polynomial(text, k, per)
    assert poly is not None
    rng = np.random.default_rng(nr)
    n = 3 * BLOCK // nr + 7  # several blocks and a partial one
    Uz, RzT, f = rng.normal(0, 3, (k, n + 5)), rng.normal(0, 1, (k, nr)), rng.normal(0, 1, n + 5)
    for lo, rows in ((0, n), (5, n), (3, 1)):
        want, got = np.full((rows, nr), np.nan), np.full((rows, nr), np.nan)
        sk.poly_e(Uz, RzT, f, lo, poly.exps, poly.coefs, want)
        poly_e_rows(Uz, RzT, f, lo, poly.exps, poly.coefs, got)
        np.testing.assert_array_equal(got, want)


def test_rest_sums_with_rows_side_by_side() -> None:
    """``step_kernels.rest_sums`` filled by ``poly_e_rows``: its sums with ``poly_e``."""
    from asymptotics.spiked.problem import resolve_target

    g, k, _ = resolve_target("z1 + 0.5*z1**2")
    poly = sk.polynomial("z1 + 0.5*z1**2", k, (2,))
    rng = np.random.default_rng(3)
    Uz, RzT = rng.normal(0, 3, (k, 9000)), rng.normal(0, 1, (k, 3))
    W, wr, f = rng.random((3, 1 + k)), rng.random(3), rng.normal(0, 1, 9000)
    one = sk.rest_sums(g, steps.evaluate, poly, Uz, RzT, W, wr, f, 0.25, 4096, poly_e_rows)
    two = sk.rest_sums(g, steps.evaluate, poly, Uz, RzT, W, wr, f, 0.25, 4096)
    for x, y in zip(one, two, strict=True):
        np.testing.assert_array_equal(x, y)
