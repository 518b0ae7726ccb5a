"""The polynomial-spike limit (docs/THEORY.md §13): domain, reductions and independent checks.

Independent routes to the same number:
- random features by the deterministic-equivalent formula (``asymptotics/models/rf_ridge.py``,
  no shared code with the solver) for the effective target;
- the K-group solver with zero loadings (random features) on the explicit two-index residual
  target ``g(z1) - P(gamma z1 + rho z2)`` (``risk_spiked``: its own multi-index quadrature);
- the finite-width K-group model of the step (THEORY.md §10.6, §11; the Gaussian readout on
  Gauss-Hermite nodes, ``eta = eta_tilde p^(a - 1/2)``) as ``p -> infinity``: its mean channels
  are penalised at finite p and the polynomial channels become free only through the growth of
  the loadings; it must tend to the limit;
- a Monte Carlo of the limit model (random features plus explicit unpenalised columns).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from asymptotics.multiindex.polynomial_spikes import (
    divergent_orders,
    hermite_moments,
    polynomial_spike_risk,
    projection,
)

P = dict(alpha0=2.0, eta=2.0, lam=0.1, beta=1.0)
HE2 = "z + (z**2-1)/2"


def _risk(a, sigma, target, alpha=2.0, **kw):
    return polynomial_spike_risk(alpha, a=a, sigma=sigma, target=target, **{**P, **kw})


# ---------------------------------------------------------------------------------------------
# domain


@pytest.mark.parametrize("a", [-0.1, 0.5, 0.7, math.nan])
def test_exponent_outside_domain(a):
    with pytest.raises(ValueError, match=r"\[0, 1/2\)"):
        _risk(a, "relu", "tanh")


def test_order_three_not_implemented():
    with pytest.raises(ValueError, match="ell <= 2"):
        _risk(0.34, "erf(z-1)", "tanh")
    with pytest.raises(ValueError, match="ell <= 2"):
        _risk(0.4, "relu", "tanh")  # order 4 opens at a > 3/8
    # relu has E[sigma He_3] = 0: a in (1/3, 3/8) is still ell = 2
    assert _risk(0.35, "relu", "tanh").orders == (0, 1, 2)


@pytest.mark.parametrize("a, sigma", [(0.0, "relu"), (0.25, "erf(z-1)"), (1 / 3, "erf(z-1)")])
def test_threshold_with_nonzero_coefficient(a, sigma):
    with pytest.raises(ValueError, match="finite strength"):
        _risk(a, sigma, "tanh")


def test_thresholds_without_coefficient_are_fine():
    assert divergent_orders(0.25, "tanh") == (1,)  # odd: no order 2
    assert divergent_orders(0.0, "abs") == (0,)  # even: E sigma' = 0, no order 1


def test_hermite_moments_with_kinks():
    m = hermite_moments(__import__("asymptotics").get_function("relu"), 5)
    assert m[0] == pytest.approx(1 / math.sqrt(2 * math.pi), abs=1e-13)
    assert m[1] == pytest.approx(0.5, abs=1e-13)
    assert abs(m[3]) < 1e-12 and abs(m[5]) < 1e-12


# ---------------------------------------------------------------------------------------------
# reductions


def test_independent_of_a_and_eta_within_an_interval():
    r = [_risk(a, "relu", "tanh", eta=e).risk for a in (0.05, 0.1, 0.2) for e in (0.3, 2.0)]
    assert max(r) - min(r) < 1e-12
    r2 = [_risk(a, "erf(z-1)", HE2).risk for a in (0.26, 0.3, 0.33)]
    assert max(r2) - min(r2) < 1e-12


def test_eta_zero_is_random_features():
    from asymptotics.models.rf_ridge import rf_ridge_risk

    for sigma, target in [("relu", "tanh"), ("erf(z-1)", HE2)]:
        res = _risk(0.3, sigma, target, eta=0.0)
        assert res.orders == (0,)
        ref = rf_ridge_risk(2.0, sigma=sigma, target=target, lam=0.1, beta=1.0)
        assert res.risk == pytest.approx(ref, rel=1e-7)
        assert res.risk == pytest.approx(res.risk_rf, rel=1e-10)


def test_ell_zero_even_activation_is_random_features():
    """abs: E sigma' = 0, so below a = 1/4 only the mean channel diverges: random features."""
    from asymptotics.models.rf_ridge import rf_ridge_risk

    res = _risk(0.2, "abs", HE2)
    assert res.orders == (0,) and res.ell == 0
    assert res.risk == pytest.approx(rf_ridge_risk(2.0, sigma="abs", target=HE2, lam=0.1,
                                                   beta=1.0), rel=1e-7)
    # above 1/4 the kappa^2 channel opens while the linear part stays with the bulk (zeta)
    hi = _risk(0.3, "abs", HE2)
    assert hi.orders == (0, 2)
    assert hi.linear_eff == pytest.approx(1.0, rel=1e-10)  # mu1* of z + He2/2
    assert hi.risk < res.risk


def test_odd_activation_has_no_order_two():
    lo, hi = _risk(0.1, "erf", HE2), _risk(0.3, "erf", HE2)
    assert lo.orders == hi.orders == (1,)
    assert lo.risk == pytest.approx(hi.risk, rel=1e-12)
    # no mean channel with an odd sigma: the target's mean stays (here 0) and E P = 0
    assert hi.projection[0] == 0.0


def test_effective_coefficients_closed_form():
    """S = {0, 1, 2}: mean 0, linear mu1* rho, nonlinear mu*^2 - gamma^4 c2^2 / 2."""
    from asymptotics.coefficients.cget import ge_coefficients

    res = _risk(0.3, "erf(z-1)", HE2)
    k = ge_coefficients("erf(z-1)", HE2)
    c2 = 1.0  # E[(z + He2/2) He2]
    assert res.orders == (0, 1, 2)
    assert res.gamma == pytest.approx(k.mu1_star / math.sqrt(k.mu1_star**2 + k.mu2_star / 2))
    assert res.mean_eff == pytest.approx(0.0, abs=1e-12)
    assert res.linear_eff == pytest.approx(k.mu1_star * res.rho, rel=1e-10)
    nl = k.mu2_star - k.mu0_star**2 - k.mu1_star**2
    assert res.nonlinear_eff == pytest.approx(nl - res.gamma**4 * c2**2 / 2, rel=1e-10)
    # S = {0, 1}: the He2 part stays in the nonlinear power
    lo = _risk(0.2, "erf(z-1)", HE2)
    assert lo.nonlinear_eff == pytest.approx(nl, rel=1e-10)


def test_projection_on_kappa_squared_alone():
    """span{kappa^2} (no separate constant): the coefficient is E[h kappa^2] / E kappa^4."""
    h = (0.3, 0.5, 0.2)  # h0 + h1 He1 + h2 He2: E[h kappa^2] = h0 + 2 h2
    p = projection((2,), h)
    b = (h[0] + 2 * h[2]) / 3.0
    np.testing.assert_allclose(p, [b, 0.0, b], atol=1e-14)


# ---------------------------------------------------------------------------------------------
# independent checks


@pytest.mark.parametrize("sigma, target, a", [("relu", "tanh", 0.2), ("erf(z-1)", HE2, 0.3),
                                              ("relu", HE2, 0.1)])
def test_against_k_group_solver_on_the_residual_target(sigma, target, a):
    """Random features (loadings 0) on g(z1) - P(gamma z1 + rho z2), by risk_spiked."""
    from asymptotics.spiked import risk_spiked

    res = _risk(a, sigma, target)
    g, r = res.gamma, res.rho
    p0, p1, p2 = res.projection
    kap = f"({g!r}*z1 + {r!r}*z2)"
    gz = target.replace("z", "z1") if target != "tanh" else "tanh(z1)"
    resid = f"{gz} - ({p0!r} + {p1!r}*{kap} + {p2!r}*({kap}**2 - 1))"
    ref = risk_spiked(2.0, sigma=sigma, target=resid, loadings=[[0.0]], bulk=[1.0],
                      fractions=[1.0], overlaps=[[0.0, 0.0]], lam=0.1, beta=1.0,
                      n_omega=60)
    assert ref.converged
    assert res.risk == pytest.approx(ref.risk, rel=2e-5)


@pytest.mark.parametrize("sigma, target, a, rel", [("relu", "tanh", 0.2, 1e-3),
                                                   ("erf(z-1)", HE2, 0.3, 4e-3)])
def test_finite_width_k_group_model_tends_to_the_limit(sigma, target, a, rel):
    """The K-group model of the step at width p (10 Gauss-Hermite groups for the Gaussian
    readout, eta = eta_tilde p^(a - 1/2)) approaches the limit like a power of p."""
    from asymptotics import risk_readout
    from asymptotics.coefficients.gauss_rules import gauss_hermite

    z, w = gauss_hermite(10)
    readout = {float(v): float(x) for v, x in zip(z, w, strict=True)}
    s = sum(readout.values())
    readout = {v: x / s for v, x in readout.items()}
    lim = _risk(a, sigma, target).risk
    gaps = []
    for p in (1e4, 1e6, 1e10):
        kg = risk_readout(2.0, readout=readout, sigma=sigma, target=target, alpha0=2.0,
                          eta=2.0 * p ** (a - 0.5), lam=0.1, beta=1.0, p=p)
        assert kg.converged
        gaps.append(abs(kg.risk - lim))
    assert gaps[0] > gaps[1] > gaps[2]
    assert gaps[2] < rel * lim


def test_monte_carlo_of_the_limit_model():
    """Random features plus explicit unpenalised columns kappa^l (d = 400, 8 draws), with S
    recomputed from sigma's Hermite coefficients (not the code under test), against the limit
    within the two-sided 99.9% Student quantile (7 degrees of freedom) of the s.e. and no bias
    allowance: the committed check (POLYNOMIAL_SPIKES.md) measures no d-dependence of the limit
    model's gap at d = 500-2000 (|z| <= 2.1 there)."""
    from scipy import stats

    from validation.experiments.polynomial_spikes import columns_run, divergent_orders

    setting = dict(name="t", sigma="erf(z-1)", target=HE2, a=0.3)
    res = _risk(0.3, "erf(z-1)", HE2)
    orders = divergent_orders(setting)
    assert orders == res.orders == (0, 1, 2)
    x = np.array([columns_run(setting, 400, rep, orders=orders) for rep in range(8)])
    se = x.std(ddof=1) / math.sqrt(x.size)
    assert abs(x.mean() - res.risk) < stats.t.ppf(0.9995, x.size - 1) * se, (x.mean(), res.risk, se)


def test_effective_target_through_the_one_spike_solver():
    """The same random-features risk of the effective target by asymptotics.risk(model='rf')."""
    from asymptotics import risk

    res = _risk(0.3, "erf(z-1)", HE2)
    s = math.sqrt(res.nonlinear_eff / 2)
    expr = f"{res.mean_eff!r} + {res.linear_eff!r}*z + {s!r}*(z**2 - 1)"
    ref = risk(2.0, sigma="erf(z-1)", target=expr, eta=0.0, lam=0.1, beta=1.0, model="rf")
    assert res.risk == pytest.approx(ref.risk, rel=1e-7)


def test_committed_report_is_regenerated_from_committed_runs():
    """validation/reports/POLYNOMIAL_SPIKES.md is what the builder writes from the committed
    runs and check CSVs (no simulation), its discussion included (a template whose numbers
    are placeholders and whose claims are assertions)."""
    from validation.experiments import polynomial_spikes as E
    from validation.experiments.polynomial_spikes.report import markdown

    committed = (E.REPORTS / "POLYNOMIAL_SPIKES.md").read_text()
    chk = E.load_check()
    assert chk is not None and len(chk) == len(E.check_campaign().settings)
    assert markdown(E.table(E.load_runs()), E.REGENERATE, chk) == committed
