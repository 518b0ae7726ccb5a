"""Marchenko-Pastur measure: moments, Stieltjes transform, empirical atoms (THEORY.md §6)."""

import math

import numpy as np
import pytest

from asymptotics.measures.marchenko_pastur import mp_expectation, mp_moments
from asymptotics.measures.spectral import marchenko_pastur, measure_moments


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
    """The atoms of Omega = W Pi W^T (p = 300, d = 600, rows on the sphere, c = 1.4; eight draws)
    against Marchenko-Pastur: the moments at (0.3, 0.9), the mean of F (p/d c) and of the
    eigenvalues (c), each mean within the Student quantile of 7 degrees of freedom at a
    two-sided 1e-3 times its s.e., plus the finite-d bias measured as c/d
    (validation/reports/BIAS_SLOPES.md: (|c| + 3 s.e.)/600; it was one draw at 2%, 15% and
    1%)."""
    from scipy import stats

    from validation.experiments import bias_slopes as BS
    from validation.experiments.bias_slopes.spectrum import spectrum_draw, spectrum_theory

    st = BS.BY_NAME["mp-atoms-0.5"]
    d = 600
    rng = np.random.default_rng(0)
    runs = [spectrum_draw(st, d, rng) for _ in range(8)]
    det = spectrum_theory(st, d)
    assert det["rho_mean"] == 1.4 and det["F_mean"] == pytest.approx(0.7)
    t = stats.t.ppf(1 - 5e-4, len(runs) - 1)
    for q, lim in det.items():
        x = np.array([r[q] for r in runs])
        band = t * x.std(ddof=1) / math.sqrt(x.size) + BS.slope(st.name, q).allowance(d)
        assert abs(x.mean() - lim) <= band, (q, x.mean(), lim, band)


def test_bad_beta():
    with pytest.raises(ValueError, match="beta must be > 0"):
        marchenko_pastur(-1.0)
    with pytest.raises(ValueError, match="beta must be > 0"):
        mp_expectation(lambda x: x, 0.0)
    assert math.isnan(measure_moments(0, 2.0, 1.0, np.zeros(1), np.zeros(1), np.zeros(1),
                                      np.zeros(1), 0.0, 1.0)[0])


def _mp_reference(beta: float, t: float) -> list[float]:
    """The five averages of ``resolvent_mp`` by mpmath quadrature at 30 digits (an independent
    computation: x = m + h cos(theta) on the bulk, plus the atom 1 - 1/beta at 0)."""
    import mpmath as mpm

    mpm.mp.dps = 30
    b, tt = mpm.mpf(beta), mpm.mpf(t)
    m, h = 1 + b, 2 * mpm.sqrt(b)

    def avg(f):
        def g(th):
            x = m + h * mpm.cos(th)
            return f(x) * h * h * mpm.sin(th) ** 2 / (2 * mpm.pi * b * x)
        return mpm.quad(g, [0, mpm.pi / 2, mpm.pi])

    atom = max(mpm.mpf(0), 1 - 1 / b)
    return [float(v) for v in (avg(lambda x: 1 / (x + tt)) + atom / tt,
                               avg(lambda x: 1 / (x + tt) ** 2) + atom / tt**2,
                               avg(lambda x: x / (x + tt)), avg(lambda x: x / (x + tt) ** 2),
                               avg(lambda x: x**2 / (x + tt) ** 2))]


@pytest.mark.parametrize("beta,t", [(0.3, 1e-3), (0.3, 1e4), (2.0, 150.0), (10.0, 1e-3),
                                    (100.0, 101.0), (100.0, 150.0), (1e3, 1e-3), (1e3, 400.0),
                                    (1e4, 1e3), (1e6, 0.5), (1e6, 1e4), (1e6, 1e7)])
def test_resolvent_against_high_precision_quadrature(beta, t):
    """Every average to 5e-12 relative, at wide widths too: the moment series used to run
    outside its radius (t > 100 but below the support's edge (1 + sqrt beta)^2), 60 to 1e61
    wrong at beta >= 100, and <x/(x+t)^2> lost digits to the atom at small t."""
    from asymptotics.measures.marchenko_pastur import resolvent_mp

    got = resolvent_mp(beta, t)
    ref = _mp_reference(beta, t)
    np.testing.assert_allclose(got, ref, rtol=5e-12, atol=0.0)
