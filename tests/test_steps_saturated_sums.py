"""The steps' xi sums with saturated nodes in closed form (docs/THEORY.md §12.4) and the pieces'
compiled Chebyshev fit equal independent computations: every term of the rule summed exactly
(``math.fsum``) from the registered functions (numpy's logaddexp/expit, tanh), and the numpy
path of the fit; a mapping of a softplus three-valued readout equals the one whose xi sums
are all numpy's."""

from __future__ import annotations

import math

import numpy as np
import pytest

import asymptotics as A
from asymptotics.coefficients import step_quadrature
from asymptotics.coefficients.functions import get_function
from asymptotics.coefficients.gauss_rules import gauss_hermite
from asymptotics.coefficients.line_moments import chebyshev_basis
from asymptotics.multiindex import step_rules, xi_lines
from asymptotics.multiindex import steps as steps_mod


def fsum_sums(name: str, sc: float, M: np.ndarray, xi: np.ndarray, w: np.ndarray,
              small: bool) -> tuple[np.ndarray, np.ndarray]:
    """The four sums of ``xi_sums`` term by term, each exactly rounded (fsum), and per sum the
    total of its terms' absolute values (the scale of its rounding)."""
    sigma = get_function(name)
    out, mag = np.empty((len(M), 4)), np.empty((len(M), 4))
    for i, m in enumerate(M):
        f, d = sigma.value_and_derivative(sc * xi + m)
        terms = ([w * f, w * d, w * xi * d, w * d * d] if small else
                 [w * f, w * xi * f / sc, w * (xi * xi - 1.0) * f / sc, w * d * d])
        out[i] = [math.fsum(t) for t in terms]
        mag[i] = [float(np.sum(np.abs(t))) for t in terms]
    return out, mag


@pytest.mark.parametrize("name", ["softplus", "tanh"])
@pytest.mark.parametrize("sc,rule", [(0.3, "gh"), (1.0, "gh"), (2.9, "trapezoid"),
                                     (14.57, "trapezoid")])
@pytest.mark.parametrize("small", [False, True])
def test_saturated_sums_are_the_rule(name, sc, rule, small):
    """On 400 shifts over [-120 sc, 120 sc] (most nodes saturated: the closed-form tails) and
    within a few sc of 0, every sum is the rule's to 1e-13 of the sum of its terms' absolute
    values, plus 1e-15 (the registered tanh' is not 1 - tanh^2 to the last bit, the kernel's
    formula) and, for softplus, the terms not summed (below e^-77 of their weight)."""
    xi, w = gauss_hermite(96) if rule == "gh" else step_rules.xi_trapezoid(sc)
    rng = np.random.default_rng(11)
    M = np.concatenate([rng.uniform(-120 * sc, 120 * sc, 300), rng.uniform(-4 * sc, 4 * sc, 100)])
    kind = step_quadrature.SOFTPLUS if name == "softplus" else step_quadrature.TANH
    got = step_quadrature.xi_sums(kind, float(sc), M, xi, w, small)
    ref, mag = fsum_sums(name, sc, M, xi, w, small)
    dropped = math.exp(-step_quadrature.SATURATED - step_quadrature.TAIL_CUT) * (
        1.0 + float(np.max(np.abs(xi * xi - 1.0))) / min(sc, 1.0)) if name == "softplus" else 0.0
    assert np.all(np.abs(got - ref) <= 1e-13 * mag + dropped + 1e-15 / min(sc, 1.0))


def test_unsorted_rule_takes_every_node():
    """A rule whose nodes are not ascending: every node by the formulas (the same sums)."""
    xi, w = gauss_hermite(40)
    order = np.random.default_rng(2).permutation(len(xi))
    M = np.linspace(-80.0, 80.0, 41)
    got = step_quadrature.xi_sums(step_quadrature.SOFTPLUS, 1.7, M, xi[order], w[order], False)
    ref, mag = fsum_sums("softplus", 1.7, M, xi, w, False)
    assert np.all(np.abs(got - ref) <= 1e-13 * mag)


@pytest.mark.parametrize("q", [3, 4, 7])
def test_chebyshev_fit_is_the_numpy_path(q, monkeypatch):
    """The compiled fit of new pieces (coefficients, check errors, largest values) equals the
    numpy path (einsum, then the checks by ``chebyshev_pieces``) to rounding."""
    sigma = get_function("softplus")
    xi, w = gauss_hermite(96)

    def direct(pts: np.ndarray) -> np.ndarray:
        v = xi_lines.xi_direct(sigma, 1.3, pts, xi, w)
        return np.column_stack([v, v[:, :q - 4] ** 2]) if q > 4 else v[:, :q]

    todo = list(range(-30, 31))
    got = xi_lines._pieces(direct, todo, 1.0)
    compiled = xi_lines._compiled
    monkeypatch.setattr(xi_lines, "_compiled", lambda disp, *a: (
        disp is not step_quadrature.chebyshev_fit and compiled(disp, *a)))
    ref = xi_lines._pieces(direct, todo, 1.0)
    for i in todo:
        (c1, e1, b1), (c2, e2, b2) = got[i], ref[i]
        assert c1.shape == (chebyshev_basis(xi_lines.M_CHEB)[0].shape[0], q)
        assert np.max(np.abs(c1 - c2)) <= 1e-14 * max(1.0, float(np.max(np.abs(b2))))
        assert np.array_equal(b1, b2)
        assert np.all(np.abs(e1 - e2) <= 1e-14 * np.maximum(b2, 1.0))


def test_softplus_three_values_mapping_is_numpys(monkeypatch):
    """A softplus mapping with a three-valued readout (bulks up to ~15, shifts up to ~1500: the
    sums of wide rules over wide ranges) equals the one with every xi sum by numpy (another
    implementation of the same rule) to 1e-12 of each array's largest entry."""
    kw = dict(steps=3, alpha0=16.0, eta=(9.02, 15.82, 15.53),
              readout={1.0: 0.29, -1.0: 0.23, 2.41: 0.48})
    steps_mod.clear_cache()
    got = A.steps_mapping("softplus", "tanh", **kw)
    monkeypatch.setattr(xi_lines, "_fused", lambda *a, **k: None)
    steps_mod.clear_cache()
    ref = A.steps_mapping("softplus", "tanh", **kw)
    steps_mod.clear_cache()
    for s1, s2 in zip(got.states[1:], ref.states[1:], strict=True):
        for x, y in ((s1.a, s2.a), (s1.L @ s1.L.T, s2.L @ s2.L.T), (s1.c, s2.c)):
            assert np.max(np.abs(x - y)) <= 1e-12 * np.max(np.abs(y))
