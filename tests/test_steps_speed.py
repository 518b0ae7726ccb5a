"""The steps' mapping computed fast (docs/THEORY.md §12.2): the xi-moments from a checked piecewise
interpolant equal the xi rule, and the sums over the other axes taken first equal the sums over
every node of the product rule (an independent re-implementation, extended precision)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import asymptotics as A
from asymptotics.coefficients.functions import get_function
from asymptotics.coefficients.gauss_rules import gauss_hermite
from asymptotics.multiindex import steps as steps_mod
from asymptotics.multiindex import xi_lines
from asymptotics.spiked.coefficients import tensor_rule
from asymptotics.spiked.problem import resolve_target


@pytest.mark.parametrize("name,c", [("erf(z-1)", 1.27), ("tanh", 0.3), ("softplus", 2.0),
                                    ("relu", 1.0)])
def test_xi_moments_are_the_xi_rule(name, c):
    """On 20000 shifts in [-30, 30] (the steps' range) the interpolated moments equal the xi rule
    to TOL of each moment's largest value (relu: its 96-node rule is not smooth in the shift,
    the refused pieces are the rule itself)."""
    sigma = get_function(name)
    xi, wxi = gauss_hermite(96)
    M = np.random.default_rng(3).uniform(-30.0, 30.0, (20000, 1))
    xi_lines.clear_cache()
    got = np.stack(xi_lines.xi_moments(sigma, np.array([c]), M, xi, wxi))
    ref = xi_lines.xi_direct(sigma, math.sqrt(c), M[:, 0], xi, wxi).T
    ref[3] = np.maximum(ref[3] - ref[1] ** 2, 0.0)
    scale = np.max(np.abs(ref), axis=1)
    assert np.all(np.max(np.abs(got[:, :, 0] - ref), axis=1) <= 10 * xi_lines.TOL * scale)


def test_xi_moments_do_not_depend_on_the_cache():
    """Pieces cached by an earlier call over another range give the same numbers, bit for bit."""
    sigma = get_function("erf(z-1)")
    xi, wxi = gauss_hermite(96)
    M = np.linspace(-12.0, 7.0, 5001)[:, None]
    xi_lines.clear_cache()
    fresh = xi_lines.xi_moments(sigma, np.array([0.8]), M, xi, wxi)
    xi_lines.clear_cache()
    xi_lines.xi_moments(sigma, np.array([0.8]), np.linspace(-30.0, 2.0, 3000)[:, None], xi, wxi)
    again = xi_lines.xi_moments(sigma, np.array([0.8]), M, xi, wxi)
    assert all(np.array_equal(x, y) for x, y in zip(fresh, again, strict=True))


def _advance_every_node(state, sigma, g, values, fractions, eta, alpha0, degree):
    """One step by the sums over every (spike, other) node pair in extended precision: the
    module docstring's integrals, written out node by node."""
    K, k = state.a.shape
    q = state.L.shape[1]
    S = np.hstack([state.a, state.L])
    _, sv, vt = np.linalg.svd(S, full_matrices=True)
    r = int(np.sum(sv > 1e-10 * sv.max()))
    U, wu = steps_mod.trapezoid(r, steps_mod.TRAPEZOID_STEP[r])
    n_rest = degree + 2 if degree is not None else steps_mod.REST_NODES[k + q - r]
    R, wr = tensor_rule(k + q - r, n_rest)
    xi, wxi = gauss_hermite(96)
    F, m1, m2, v = xi_lines.xi_moments(sigma, state.c, U @ (S @ vt.T[:, :r]).T, xi, wxi)
    X = U[:, None, :] @ vt[:r] + (R @ vt[r:])[None, :, :]
    ld = np.longdouble
    w = wu[:, None].astype(ld) * wr[None, :]
    e = (steps_mod.evaluate(g, X[..., :k]) - (F @ (fractions * values))[:, None]).astype(ld)
    dX = np.einsum("ur,ug,urj->gj", w * e, m1.astype(ld), X.astype(ld))
    e_m2 = np.einsum("ur,ug->g", w * e, m2.astype(ld))
    noise = np.sum(w * e * e, axis=1)
    sqrt_c = np.sqrt(state.c) + eta * values * e_m2
    c = sqrt_c**2 + eta**2 * values**2 * (noise @ v.astype(ld)) / alpha0
    a = state.a + eta * values[:, None] * dX[:, :k]
    return np.asarray(a, dtype=np.float64), np.asarray(c, dtype=np.float64)


@pytest.mark.parametrize("sigma,target,readout", [("erf(z-1)", "z1 + z1*z2", "pm1"),
                                                  ("tanh", "tanh", "constant")])
def test_advance_equals_the_sum_over_every_node(sigma, target, readout):
    """The third step of a mapping against the node-by-node sums (a, c) to 1e-13."""
    mp = A.steps_mapping(sigma, target, steps=3, alpha0=16.0, eta=(2.0, 8.0, 16.0),
                         readout=readout)
    ro = mp.readout
    g, _, _ = resolve_target(target)
    values, fractions = np.asarray(ro.values), np.asarray(ro.weights)
    st = mp.states[2]
    degree = 2 if target == "z1 + z1*z2" else None
    a, c = _advance_every_node(st, get_function(sigma), g, values, fractions, 16.0, 16.0,
                               degree)
    assert np.max(np.abs(mp.states[3].a - a)) <= 1e-13 * np.max(np.abs(a))
    assert np.max(np.abs(mp.states[3].c - c)) <= 1e-13 * np.max(c)
