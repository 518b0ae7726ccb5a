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
