"""The relu target's kink on a spike axis (alpha0 = inf: no other axis sees z1), docs/THEORY.md
§12.4: the split double-exponential rule (``step_kernels.kink_rule``) against closed forms and
against the default trapezoid rule extrapolated in its step (its error is a series in h^2)."""

import math

import numpy as np
import pytest
from scipy import integrate

import asymptotics as A
from asymptotics.coefficients import step_kernels
from asymptotics.multiindex import steps

KW = dict(alpha0=math.inf, eta=(1.51, 14.2, 3.75), readout={1.0: 0.19, -1.0: 0.13, 1.44: 0.68})


def test_kink_rule_closed_forms():
    """Geometric convergence in the step: 1e-16 at step 1/16 on moments kinked at 0."""
    U, w, even = step_kernels.kink_rule(0.0625, 9.0)  # E relu(u) u^2: 5e-6, 1.3e-13 at 0.25, 0.125
    u = U[:, 0]
    assert abs(w.sum() - 1.0) < 1e-14
    assert abs(w @ np.abs(u) - math.sqrt(2 / math.pi)) < 1e-14  # E|u|
    assert abs(w @ (np.maximum(u, 0) * u * u) - math.sqrt(2 / math.pi)) < 1e-14  # E relu(u) u^2
    ref, _ = integrate.quad(lambda x: x * math.tanh(30 * x) * math.exp(-x * x / 2), 0, 12,
                            epsabs=1e-14, epsrel=1e-13, limit=400)  # a steep feature at the kink
    assert abs(w @ (np.maximum(u, 0) * np.tanh(30 * u)) - ref / math.sqrt(2 * math.pi)) < 1e-13
    # the even nodes with twice the weights are the rule of step 2h
    U2, w2, _ = step_kernels.kink_rule(0.125, 9.0)
    np.testing.assert_array_equal(U[even], U2)
    np.testing.assert_allclose(2 * w[even], w2, rtol=1e-15)


def states(quad: steps.Quadrature | None = None) -> list:
    steps.clear_cache()
    m = A.steps_mapping("relu", "relu", steps=3, quad=quad or steps.Quadrature(), **KW)
    steps.clear_cache()
    return [(s.a, s.c) for s in m.states[1:]]


def rel(x: list, y: list) -> float:
    return max(float(np.max(np.abs(a - b)) / np.max(np.abs(a)))
               for sx, sy in zip(x, y, strict=True) for a, b in zip(sx, sy, strict=True))


def test_mapping_against_extrapolated_trapezoid():
    """Richardson twice (h^2, h^4) on the trapezoid rule of steps 0.01, 0.005, 0.0025 (it moved
    by 3e-4 from 0.04 to 0.02 and by 2e-5 from 0.01 to 0.005): the kink rule within 1e-12."""
    t = {h: states(steps.Quadrature(h=h)) for h in (0.01, 0.005, 0.0025)}

    def rich(p: list, q: list, f: float) -> list:
        return [tuple((f * b - a) / (f - 1) for a, b in zip(sa, sb, strict=True))
                for sa, sb in zip(p, q, strict=True)]

    ref = rich(rich(t[0.01], t[0.005], 4), rich(t[0.005], t[0.0025], 4), 16)
    new = states()
    assert rel(ref, new) <= 1e-12
    assert rel(t[0.0025], new) >= 1e-7  # the trapezoid rule itself far from settled


def test_mapping_settled_under_refinement(monkeypatch):
    new = states()
    monkeypatch.setattr(step_kernels, "KINK_H", (1.0 / 16, 1.0 / 64))  # four times finer
    assert rel(states(), new) <= 1e-12


def test_not_settled_is_refused(monkeypatch):
    monkeypatch.setattr(step_kernels, "KINK_TOL", 0.0)
    with pytest.raises(ValueError, match="did not settle"):
        states()


def test_relu_sigma_with_two_groups_is_refused():
    """relu's own 96-node xi rule (pm1 readout) is kinked in the shift: the default lattice moves
    by 3.4e-2, 1.4e-2, 3.3e-3 halving its step from 0.04 to 0.005, so no number is given."""
    steps.clear_cache()
    with pytest.raises(ValueError, match="does not settle.*pass a finite alpha0"):
        A.steps_mapping("relu", "relu", steps=3, alpha0=math.inf, eta=(6.34, 4.29, 13.36),
                        readout="pm1")
    with pytest.raises(ValueError, match="does not settle"):
        A.risk(2.0, steps=2, sigma="relu", target="relu", alpha0=math.inf, model="srf")
    steps.clear_cache()
