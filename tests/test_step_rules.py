"""The rules of one step of the steps' mapping (docs/THEORY.md §12.4, multiindex/step_rules.py)
against independent evaluations: a closed form of the first step, a much finer reference rule
(lattice and xi rule), and the refusal above three spike axes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate

import asymptotics as A
from asymptotics.multiindex import step_rules, xi_lines
from asymptotics.multiindex import steps as steps_mod


def _rel(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.max(np.abs(x - y))) / max(float(np.max(np.abs(y))), 1e-300)


def test_lattice_sub_rule_is_the_rule_of_twice_the_steps():
    """The nodes with even indices on the coarse axes, reweighted, are the rule of steps 2 h
    there (and h on an axis at the default step): it integrates exp(u1) exactly as that rule."""
    h = np.array([0.3, 0.08])
    U, w, sub, ws = step_rules.lattice(h, 9.0, 0.08)
    assert np.all(np.abs(U[sub, 0] / 0.6 - np.round(U[sub, 0] / 0.6)) < 1e-9)
    assert len(np.unique(np.round(U[sub, 1] / 0.08))) == len(np.unique(np.round(U[:, 1] / 0.08)))
    for rule in ((U, w), (U[sub], ws)):
        assert abs(rule[1] @ np.exp(rule[0][:, 0]) - math.exp(0.5)) < 1e-13
        assert abs(rule[1].sum() - 1.0) < 1e-14


def test_first_step_of_a_tanh_target_against_its_closed_form():
    """y = z1 z2 + tanh(z1), constant readout, tanh: after one step a = eta m1 E[z tanh z] e1,
    L L^T = eta^2 (1 + E tanh^2) m1^2 / alpha0 (m1 = E tanh'(xi)), one-dimensional integrals
    by adaptive quadrature. The target is polynomial in z2: the rule is Gauss-Hermite with 128
    nodes along z1 and exact along z2 (the former 48 x 48 tensor rule was 1e-8 off)."""
    eta, alpha0 = 12.2, 16.0
    phi = lambda x: math.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)  # noqa: E731

    def E(f):
        return integrate.quad(lambda x: f(x) * phi(x), -40, 40, epsabs=1e-14, epsrel=1e-13,
                              limit=400, points=[0.0])[0]

    m1 = E(lambda x: 1 - math.tanh(x) ** 2)
    a1 = eta * m1 * E(lambda x: x * math.tanh(x))
    LL = eta**2 * (1 + E(lambda x: math.tanh(x) ** 2)) * m1**2 / alpha0
    st = A.steps_mapping("tanh", "z1*z2 + tanh(z1)", steps=1, alpha0=alpha0, eta=eta,
                         readout="constant").states[1]
    assert abs(st.a[0, 0] - a1) <= 1e-11 * abs(a1)
    assert abs(st.a[0, 1]) <= 1e-14 * abs(a1)
    assert abs((st.L @ st.L.T)[0, 0] - LL) <= 1e-10 * LL


def _reference(state, common, h, sc):
    """The step by the default code path on a lattice of step h with a trapezoid xi rule 0.04
    apart in the pre-activation (far finer than either rule compared)."""
    step = 0.04 / sc
    x = np.arange(-12.0, 12.0 + step / 2, step)
    w = np.exp(-0.5 * x * x)
    orig = steps_mod.gauss_hermite
    steps_mod.gauss_hermite = lambda n: (x, w / w.sum())
    try:
        return _by_xi_rule(state, common, h)
    finally:
        steps_mod.gauss_hermite = orig


def _by_xi_rule(state, common, h):
    """The step on the default lattice of step h with erf's xi-moments by the xi rule (its
    closed forms, ``xi_lines.erf_closed``, switched off: the reference stays independent)."""
    orig = xi_lines.erf_affine
    xi_lines.erf_affine = lambda sigma: None
    try:
        return steps_mod.advance(state, per=None, quad=steps_mod.Quadrature(h=h), **common)
    finally:
        xi_lines.erf_affine = orig


@pytest.mark.parametrize("target,readout,eta", [
    ("z1 + 0.5*z1**2", {-1.0: 0.25, 0.5: 0.5, 2.0: 0.25}, (10.94, 10.79)),
    ("z1 + z1*z2 + z1*z2*z3", {-1.0: 0.25, 0.5: 0.5, 2.0: 0.25}, (14.07, 13.7)),
])
def test_wide_bulk_step_against_a_fine_reference(target, readout, eta):
    """erf(z-1) with a wide bulk after the first step (sqrt c up to ~9): the second step by the
    mapping's rules (erf's xi-moments in closed form) equals a reference with a 3x finer lattice
    and a 6x finer xi rule to 1e-12 of each array's largest entry, where the former rule (96-node
    Gauss-Hermite xi rule, whose ripples of period sqrt(c) dxi the lattice aliased) was >= 1e-6
    off."""
    kw = dict(steps=2, alpha0=4.0, eta=eta, readout=readout)
    mp = A.steps_mapping("erf(z-1)", target, **kw)
    m = steps_mod.mapping_inputs("erf(z-1)", target, delta=0.0, quad=steps_mod.Quadrature(), **kw)
    st = mp.states[1]
    common = dict(sigma=m.sigma, g=m.g, values=m.values, fractions=m.fractions, eta=eta[1],
                  alpha0=4.0, delta=0.0, degree=m.degree)
    ref = _reference(st, common, steps_mod.TRAPEZOID_STEP[1] / 3, float(np.sqrt(st.c.max())))
    new = mp.states[2]
    old = _by_xi_rule(st, common, 0.04)
    for name in ("a", "c"):
        assert _rel(getattr(new, name), getattr(ref, name)) <= 1e-12
    assert _rel(new.L @ new.L.T, ref.L @ ref.L.T) <= 1e-12
    assert max(_rel(old.c, ref.c), _rel(old.a, ref.a)) >= 1e-6


def test_more_than_three_spike_axes_refused_in_one_line():
    """A five-valued readout spans four directions after two steps: the third step's product
    rule is refused (one line naming r and what is allowed), not built."""
    ro = {1.0: 0.2, -1.0: 0.2, 2.0: 0.2, -0.5: 0.2, 3.0: 0.2}
    with pytest.raises(ValueError, match=r"r = 4 directions.*r <= 3") as exc:
        A.steps_mapping("tanh", "z1 + z1*z2", steps=3, alpha0=16.0, eta=4.0, readout=ro)
    assert "\n" not in str(exc.value)



@pytest.mark.parametrize("target,per", [("z1 + z1*z2 + z1*z2*z3", (1, 1, 1)),
                                        ("z1**2 + z2", (2, 1)), ("z1*z2**2", (1, 2))])
def test_other_axes_rule_exact_for_a_polynomial_target(target, per):
    """The other axes' rule of a polynomial target (its directions' span, per-axis Gauss-Hermite
    counts from the variables' degrees: 4 x 3 x 2 nodes for z1 + z1 z2 + z1 z2 z3) against an
    unpruned 12-node tensor rule (numpy's hermegauss) on every one of four other axes, for the
    sums E[g], E[g R] (mapped back to the (z, h) coordinates) and E[g^2] at random spike parts
    and random directions: equal to rounding (both are exact)."""
    from asymptotics.spiked.problem import resolve_target

    g, k, _ = resolve_target(target)
    rng = np.random.default_rng(5)
    m = 4
    Bo = rng.normal(size=(m, k + 2)) * 0.8
    R, w, B = step_rules.other_axes(Bo, k, 3, per, 128)
    assert R.shape[0] < 12**k and B.shape[0] == k
    a = rng.normal(size=(5, k))
    x1, w1 = np.polynomial.hermite_e.hermegauss(12)
    R2 = np.stack(np.meshgrid(*([x1] * m), indexing="ij"), axis=-1).reshape(-1, m)
    w2 = np.prod(np.stack(np.meshgrid(*([w1 / w1.sum()] * m), indexing="ij"), axis=-1)
                 .reshape(-1, m), axis=1)

    def sums(R, w, B):
        G = g(a[:, None, :] + (R @ B[:, :k])[None, :, :])
        return G @ w, (G * w) @ (R @ B), (G * G) @ w

    for x, y in zip(sums(R, w, B), sums(R2, w2, Bo), strict=True):
        assert _rel(x, y) < 1e-13
