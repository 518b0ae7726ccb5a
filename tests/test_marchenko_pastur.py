"""Marchenko-Pastur measure: moments, Stieltjes transform, empirical atoms (THEORY.md §6)."""

import math

import numpy as np
import pytest

from asymptotics.measures.marchenko_pastur import mp_expectation, mp_moments
from asymptotics.measures.spectral import empirical_measure, marchenko_pastur, measure_moments


@pytest.mark.parametrize("beta", [0.3, 0.9, 1.0, 1.7, 4.0])
def test_moments_quadrature_vs_narayana(beta):
    ref = mp_moments(beta, 6)
    for k in range(7):
        assert mp_expectation(lambda x, k=k: x**k, beta) == pytest.approx(ref[k], rel=1e-12)
    # closed forms of the first moments
    assert ref[1] == pytest.approx(1.0) and ref[2] == pytest.approx(1 + beta)


@pytest.mark.parametrize("beta", [0.5, 0.95, 1.0, 2.0, 3.0])
@pytest.mark.parametrize("t", [1e-3, 0.05, 1.0, 30.0, 500.0])
def test_stieltjes_closed_form_vs_quadrature(beta, t):
    if beta >= 1 and t < 0.01:
        n = 4000  # near-singular integrand (atom or hard edge at 0): more nodes for the reference
    else:
        n = 2000
    c, s1 = 1.7, 0.8
    s0 = t * s1 * c
    mom = measure_moments(0, beta, c, np.zeros(1), np.zeros(1), np.zeros(1), np.zeros(1), s0, s1)

    def avg(f):
        return mp_expectation(f, beta, n=n)

    ref = [avg(lambda x: 1 / (s0 + s1 * c * x)), avg(lambda x: c * x / (s0 + s1 * c * x)),
           avg(lambda x: 1 / (s0 + s1 * c * x) ** 2), avg(lambda x: c * x / (s0 + s1 * c * x) ** 2),
           avg(lambda x: (c * x) ** 2 / (s0 + s1 * c * x) ** 2)]
    np.testing.assert_allclose(mom[:5], ref, rtol=1e-9)
    # conditional means F = beta c, H = beta rho
    assert mom[5] == pytest.approx(beta * c * mom[0])
    assert mom[6] == pytest.approx(beta * mom[1])


def test_atom_at_zero_for_beta_above_one():
    beta, s0 = 2.5, 1e-3
    z = np.zeros(1)
    mom = measure_moments(0, beta, 1.0, z, z, z, z, s0, 1.0)
    # <1/S> is dominated by the atom of mass 1 - 1/beta at rho = 0
    assert mom[0] * s0 == pytest.approx(1 - 1 / beta, rel=1e-2)


def test_empirical_measure_matches_deterministic_moments():
    rng = np.random.default_rng(0)
    p, d, c = 300, 600, 1.4
    W0 = rng.standard_normal((p, d))
    W0 /= np.linalg.norm(W0, axis=1, keepdims=True)
    v = rng.standard_normal(d)
    v /= np.linalg.norm(v)
    t = rng.standard_normal(d)
    emp = empirical_measure(W0, v, t, c)
    det = marchenko_pastur(p / d, c)
    me, md = emp.moments(0.3, 0.9), det.moments(0.3, 0.9)
    np.testing.assert_allclose(me[:5], md[:5], rtol=2e-2)
    assert np.mean(emp.F) == pytest.approx(p / d * c, rel=0.15)
    assert np.mean(emp.rho) == pytest.approx(c, rel=0.01)


def test_bad_beta():
    with pytest.raises(ValueError, match="beta must be > 0"):
        marchenko_pastur(-1.0)
    with pytest.raises(ValueError, match="beta must be > 0"):
        mp_expectation(lambda x: x, 0.0)
    assert math.isnan(measure_moments(0, 2.0, 1.0, np.zeros(1), np.zeros(1), np.zeros(1),
                                      np.zeros(1), 0.0, 1.0)[0])
