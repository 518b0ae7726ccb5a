"""relu's xi-moments in closed form and the graded spike lattice of the steps' mapping
(docs/THEORY.md §12.4): the closed forms against a fine xi rule, the graded rule against an
adaptive 1-d quadrature, and a three-value relu mapping at T = 3 against a much finer rule."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import ndtr

import asymptotics as A
from asymptotics.coefficients.functions import get_function
from asymptotics.multiindex import graded, step_rules, xi_lines
from asymptotics.multiindex import steps as steps_mod


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
@pytest.mark.parametrize("sc", [0.05, 0.7, 1.0, 4.0])
def test_relu_closed_forms_are_the_gaussian_integrals(sc):
    """E relu, E relu', E[xi relu'], E relu'^2 at sc xi + M against scipy's adaptive quadrature
    in xi split at the kink xi = -M / sc."""
    M = np.array([-30.0, -3.1, -0.4 * sc, -0.01, 0.0, 0.2, 1.3 * sc, 7.0, 30.0])
    got = xi_lines.relu_closed(sc, M)

    def gauss(f, m):
        k = -m / sc
        pdf = lambda t: f(t) * math.exp(-0.5 * t * t) / math.sqrt(2 * math.pi)  # noqa: E731
        kw = dict(limit=200, epsabs=1e-15, epsrel=1e-13)
        return quad(pdf, -14.0, k, **kw)[0] + quad(pdf, k, 14.0, **kw)[0]

    for m, row in zip(M, got, strict=True):
        ref = [gauss(lambda t, m=m: max(sc * t + m, 0.0), m),
               gauss(lambda t, m=m: float(sc * t + m > 0), m),
               gauss(lambda t, m=m: t * float(sc * t + m > 0), m),
               gauss(lambda t, m=m: float(sc * t + m > 0), m)]
        assert np.allclose(row, ref, rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("expr,kab", [("erf", (1.0, 1.0, 0.0)), ("erf(z-1)", (1.0, 1.0, -1.0)),
                                      ("erf(2*z + 0.5)", (1.0, 2.0, 0.5)),
                                      ("3*erf(-0.7*z)", (-3.0, 0.7, 0.0))])
@pytest.mark.parametrize("sc", [0.05, 0.7, 4.0])
def test_erf_closed_forms_are_the_gaussian_integrals(expr, kab, sc):
    """k erf(a z + b)'s E sigma, E sigma', E[xi sigma'], E sigma'^2 at sc xi + M in closed form
    against scipy's adaptive quadrature in xi (sigma' = k a 2/sqrt(pi) exp(-(a x + b)^2))."""
    sigma = get_function(expr)
    assert xi_lines.erf_affine(sigma) == pytest.approx(kab, abs=1e-15)
    k, a, b = kab
    M = np.array([-30.0, -3.1, -0.4 * sc, 0.0, 0.2, 1.3 * sc, 7.0])
    got = xi_lines.erf_closed(sc, M, k, a, b)
    d = lambda x: k * a * 2 / math.sqrt(math.pi) * math.exp(-(a * x + b) ** 2)  # noqa: E731

    def gauss(f, m):  # split where sigma' peaks (a x + b = 0)
        pdf = lambda t: f(t) * math.exp(-0.5 * t * t) / math.sqrt(2 * math.pi)  # noqa: E731
        peak = min(max((-b / a - m) / sc, -13.0), 13.0)
        kw = dict(limit=400, epsabs=1e-15, epsrel=1e-13)
        return quad(pdf, -14.0, peak, **kw)[0] + quad(pdf, peak, 14.0, **kw)[0]

    for m, row in zip(M, got, strict=True):
        ref = [gauss(lambda t, m=m: k * math.erf(a * (sc * t + m) + b), m),
               gauss(lambda t, m=m: d(sc * t + m), m),
               gauss(lambda t, m=m: t * d(sc * t + m), m),
               gauss(lambda t, m=m: d(sc * t + m) ** 2, m)]
        assert np.allclose(row, ref, rtol=1e-11, atol=1e-13)
    for other in ("tanh", "softplus", "relu", "erf(z)**2", "erf(z**2)"):
        assert xi_lines.erf_affine(get_function(other)) is None


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
def test_graded_axis_integrates_a_steep_function():
    """A trapezoid rule through the graded map on a function that switches over 0.11 at u = 0
    (as a steep group's moments do) against scipy's adaptive quadrature split at 0."""
    a = 9.1

    def f(u):
        return ndtr(a * u) ** 2 * (1 + u + u * u) * a * u

    exact = quad(lambda u: f(u) * math.exp(-u * u / 2) / math.sqrt(2 * math.pi), -10, 10,
                 points=[0.0], limit=400, epsabs=1e-15, epsrel=1e-14)[0]
    u, w, _ = graded.graded_axis(0.29, 0.133, 9.0, 2.0, 9.1)
    assert len(u) < 130  # a uniform rule of the fine step would need 470 nodes
    assert abs(w @ f(u) - exact) <= 1e-11 * abs(exact)


SETTING = dict(target="z1 + 0.5*z1**2", readout={1.0: 0.38, -1.0: 0.22, -0.51: 0.4},
               alpha0=16.0, eta=(7.1, 1.72, 5.99))


def _fine_reference(monkeypatch, refine: float):
    """The mapping on the uniform per-axis lattice of steps 2 pi / (sqrt(80) sqrt(1 + 4 b^2))
    / refine (Gaussian spectra below e^-40 before refining; no nesting, no check, no grading)
    with relu's closed-form moments."""

    def start(direct, sigma, c, Mmat, h0, xi, wxi, u_max, closed=None):  # as graded.start
        b = np.max(np.abs(Mmat) / np.sqrt(c)[:, None], axis=0)
        h = np.minimum(2 * math.pi / (math.sqrt(80.0) * np.sqrt(1 + 4 * b * b)), 0.5) / refine
        return h, closed

    def spike_rule(hs, h0, u_max, terms, update, default, check=None):
        U, wu = default() if hs is None else step_rules.lattice(hs, u_max, 0.0)[:2]
        return update(U, wu, *terms(U))

    monkeypatch.setattr(graded, "start", start)
    monkeypatch.setattr(graded, "spike_rule", spike_rule)
    steps_mod.clear_cache()
    try:
        return A.steps_mapping("relu", steps=3, **SETTING)
    finally:
        steps_mod.clear_cache()


def test_three_value_relu_mapping_agrees_with_a_finer_rule(monkeypatch):
    """relu, a three-value readout, T = 3 (three spike axes at the last step, one of them steep:
    |M| / sqrt(c) up to about 4): every state within 1e-9 (relative to each array's largest
    entry) of a rule with about five times the nodes; the former rule (the 96-node xi rule's
    kinked moments on the default lattice) was 3.8e-3 off."""
    steps_mod.clear_cache()
    got = A.steps_mapping("relu", steps=3, **SETTING)
    with monkeypatch.context() as mp:
        ref = _fine_reference(mp, 1.5)
    assert got.states[-1].L.shape[0] == 3
    for s, t in zip(got.states, ref.states, strict=True):
        for x, y in ((s.a, t.a), (s.spike_gram, t.spike_gram), (s.c, t.c)):
            assert np.max(np.abs(x - y)) <= 1e-9 * np.max(np.abs(y))


def test_two_groups_keep_the_xi_rule():
    """Fewer than three groups: no closed form (the network route's groups share the rule)."""
    relu = get_function("relu")
    assert graded.closed_moments(relu, 2) is None
    assert graded.closed_moments(relu, 3) == [xi_lines.CLOSED] * 3
    assert graded.closed_moments(get_function("tanh"), 3) is None


def test_relu_target_other_axes_sums_in_closed_form():
    """graded.relu_rest: E_R[e], E_R[e R], E_R[e^2] + delta for e = relu(a + beta . R) - f,
    R ~ N(0, I_2), against scipy's adaptive quadrature along beta split at the kink (the part
    of R orthogonal to beta averages out), and the former Gauss-Hermite product rules of 100 and
    400 nodes per axis converging to it (kinked: algebraically, 2e-4 and 9e-5)."""
    from asymptotics.coefficients.gauss_rules import gauss_hermite

    beta = np.array([0.6, -0.3])
    a = np.array([-2.0, -0.4, 0.0, 0.25, 1.7])
    f = np.array([0.3, -0.1, 0.5, 0.0, 1.2])
    e0, e1, e2 = graded.relu_rest(a, beta, f, 0.1)
    errs = []
    for n in (100, 400):
        x, w = gauss_hermite(n)
        R = np.stack(np.meshgrid(x, x, indexing="ij"), axis=-1).reshape(-1, 2)
        W = np.outer(w, w).ravel()
        e = np.maximum(a[:, None] + (R @ beta)[None, :], 0.0) - f[:, None]
        errs.append(max(np.max(np.abs(e0 - e @ W)), np.max(np.abs(e1 - e @ (W[:, None] * R))),
                        np.max(np.abs(e2 - (e * e) @ W - 0.1))))
    assert errs[1] < 0.5 * errs[0] < 2e-4
    b = float(np.linalg.norm(beta))

    def moment(ai, fi, power):
        def h(t):
            return (max(ai + b * t, 0.0) - fi) ** power * math.exp(-0.5 * t * t) \
                / math.sqrt(2 * math.pi)
        kw = dict(limit=200, epsabs=1e-15, epsrel=1e-13)
        return quad(h, -14, -ai / b, **kw)[0] + quad(h, -ai / b, 14, **kw)[0]

    def along(ai):  # E[relu(a + b t) t]
        def h(t):
            return max(ai + b * t, 0.0) * t * math.exp(-0.5 * t * t) / math.sqrt(2 * math.pi)
        kw = dict(limit=200, epsabs=1e-15, epsrel=1e-13)
        return quad(h, -14, -ai / b, **kw)[0] + quad(h, -ai / b, 14, **kw)[0]

    for j, (ai, fi) in enumerate(zip(a, f, strict=True)):
        assert abs(e0[j] - moment(ai, fi, 1)) <= 1e-12
        assert abs(e2[j] - (moment(ai, fi, 2) + 0.1)) <= 1e-12
        assert np.allclose(e1[j], beta / b * along(ai), rtol=0, atol=1e-12)


def test_bounded_target_other_axes_sums_interpolated():
    """step_rules.smooth_rest (tanh target, the 128-node rule on one other axis) equals the
    rule's per-node sums to 1e-12."""
    from asymptotics.coefficients.gauss_rules import gauss_hermite

    g = get_function("tanh")
    assert step_rules.smooth_target(g, 128) and not step_rules.smooth_target(g, 8)
    assert not step_rules.smooth_target(get_function("relu"), 128)
    x, w = gauss_hermite(128)
    R, wr, bz = x[:, None], w, np.array([0.8])
    a = np.linspace(-9.0, 7.0, 4001)
    f = 0.3 * np.sin(a)
    got = step_rules.smooth_rest(g, a, R, wr, bz, f, 0.05)
    e = g(a[:, None] + (R @ bz)[None, :]) - f[:, None]
    want = (e @ wr, e @ (wr[:, None] * R), (e * e) @ wr + 0.05 * wr.sum())
    for u, v in zip(got, want, strict=True):
        assert np.max(np.abs(u - v)) <= 1e-12
