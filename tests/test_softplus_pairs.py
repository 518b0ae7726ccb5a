"""softplus and its derivative at an xi rule's pre-activations by one compiled pass
(``multiindex.compiled.softplus``) against numpy's passes (``xi_lines._softplus_fdf``), and the
steps' fits of tanh by the compiled sums (``xi_lines.fits``; docs/THEORY.md §12.4)."""

from __future__ import annotations

import numpy as np
import pytest

from asymptotics.coefficients.functions import get_function
from asymptotics.coefficients.gauss_rules import gauss_hermite
from asymptotics.multiindex import xi_lines
from asymptotics.multiindex.compiled.softplus import pairs, softplus_pairs


@pytest.mark.parametrize("sc", [0.3, 1.0, 2.7])
def test_kernel_is_numpy_softplus(sc: float) -> None:
    rng = np.random.default_rng(int(10 * sc))
    xi = np.sort(rng.standard_normal(41)) * 3.0
    M = np.concatenate([rng.normal(0.0, 15.0, 300), [0.0, -0.0, 36.9, 37.1, -37.1, -745.0, 800.0,
                                                     -800.0]])
    s, ds = np.empty((M.shape[0], xi.shape[0])), np.empty((M.shape[0], xi.shape[0]))
    softplus_pairs(sc, M, xi, s, ds)  # the kernel itself (compiled or interpreted)
    f, d = xi_lines._softplus_fdf(sc * xi[None, :] + M[:, None])
    np.testing.assert_allclose(s, f, rtol=1e-13, atol=0.0)
    np.testing.assert_allclose(ds, d, rtol=1e-13, atol=1e-300)
    out = pairs(sc, M, xi)
    if out is not None:  # compiled: the wrapper's arrays are the kernel's
        assert np.array_equal(out[0], s) and np.array_equal(out[1], ds)


def test_xi_direct_with_the_kernel_as_without(monkeypatch: pytest.MonkeyPatch) -> None:
    """The columns of ``xi_direct`` / ``xi_direct_small`` for softplus with the kernel's arrays
    as with numpy's (the sums over the rule stay numpy's)."""
    sigma = get_function("softplus")
    xi, wxi = gauss_hermite(96)
    M = np.linspace(-30.0, 30.0, 257)
    for fn, sc in ((xi_lines.xi_direct, 1.3), (xi_lines.xi_direct_small, 0.3)):
        with_kernel = fn(sigma, sc, M, xi, wxi)
        monkeypatch.setattr(xi_lines, "_softplus_pairs", lambda *a: None)
        without = fn(sigma, sc, M, xi, wxi)
        monkeypatch.undo()
        scale = np.max(np.abs(without), axis=0)
        assert np.all(np.max(np.abs(with_kernel - without), axis=0) <= 1e-13 * scale)


def test_fits_compiled_for_tanh_only() -> None:
    assert xi_lines.fits(get_function("tanh")) == 0
    for name in ("softplus", "relu", "erf"):
        assert xi_lines.fits(get_function(name)) is None


def test_tanh_moments_with_compiled_fits_as_numpy_fits() -> None:
    """tanh's xi-moments from fits by the compiled sums (``least=0``) agree with those from
    numpy's sums to 1e-13 of each moment's scale."""
    sigma = get_function("tanh")
    xi, wxi = gauss_hermite(96)
    rng = np.random.default_rng(5)
    M = rng.standard_normal((4000, 2)) @ np.array([[3.0, 0.5], [-1.0, 4.0]]).T
    c = np.array([1.7, 0.6])
    xi_lines.clear_cache()
    got = xi_lines.xi_moments(sigma, c, M, xi, wxi, least=0)
    xi_lines.clear_cache()
    want = xi_lines.xi_moments(sigma, c, M, xi, wxi)
    xi_lines.clear_cache()
    for a, b in zip(got, want, strict=True):
        assert np.max(np.abs(a - b)) <= 1e-13 * max(np.max(np.abs(b)), 1e-300)


def test_saturated_values_are_the_formulas() -> None:
    """Beyond |z| > SATURATED the kernel writes, without exp / log1p, the values the formulas
    round to: against the formulas themselves (compiled alike), bit for bit, on both sides of
    the cut, in the exponential's underflow and at signed zeros."""
    import math

    from asymptotics.core.coldstart import kernel

    @kernel(cache=False, error_model="numpy")
    def formulas(sc, M, xi, s, ds):  # the kernel before the saturated branches
        for i in range(M.shape[0]):
            for j in range(xi.shape[0]):
                z = sc * xi[j] + M[i]
                e = math.exp(-abs(z))
                s[i, j] = math.log1p(e) + (z if z > 0.0 else 0.0)
                ds[i, j] = (1.0 if z >= 0 else e) / (1.0 + e)

    rng = np.random.default_rng(11)
    xi = np.sort(rng.standard_normal(57)) * 4.0
    M = np.concatenate([rng.uniform(-60.0, 60.0, 4000), np.nextafter(37.0, [0.0, 99.0]),
                        np.nextafter(-37.0, [0.0, -99.0]), [37.0, -37.0, 0.0, -0.0, -744.0,
                                                            -746.0, 1e300, -1e300]])
    for sc in (0.0, 0.7, 2.3):
        a = [np.empty((M.shape[0], xi.shape[0])) for _ in range(4)]
        softplus_pairs(sc, M, xi, a[0], a[1])
        formulas(sc, M, xi, a[2], a[3])
        assert np.array_equal(a[0], a[2]) and np.array_equal(a[1], a[3])
        assert np.array_equal(np.signbit(a[0]), np.signbit(a[2]))
