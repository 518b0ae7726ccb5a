"""The self-consistent equations against independent results (THEORY.md §5, §7)."""

import math

import numpy as np
import pytest

import asymptotics as A
from asymptotics.models.bounds import large_lambda_limit, risk_bounds
from asymptotics.models.rf_ridge import rf_ridge_risk
from asymptotics.step.srf import SpikeMapping

RF_CASES = [
    ("tanh", "tanh", 1.0, 0.01, 3.0),
    ("tanh", "tanh", 0.5, 0.1, 0.7),
    ("erf", "sin", 2.0, 0.01, 1.5),
    ("relu", "tanh", 2.0, 0.1, 4.0),
    ("relu", "relu", 1.5, 0.05, 1.0),
    ("sigmoid", "he2", 1.0, 0.1, 2.0),
    ("linear", "tanh", 0.5, 0.01, 3.0),
    ("linear", "tanh", 2.0, 0.01, 3.0),
]


@pytest.mark.parametrize("sigma,target,beta,lam,alpha", RF_CASES)
def test_random_features_equal_independent_ridge_formula(sigma, target, beta, lam, alpha):
    """eta_tilde = 0: the equations reduce to classic random-features ridge (THEORY.md §7)."""
    res = A.risk(alpha, sigma=sigma, target=target, alpha0=1.0, eta=0.0, lam=lam, beta=beta,
                 model="srf")
    assert res.converged
    ref = rf_ridge_risk(alpha, sigma=sigma, target=target, lam=lam, beta=beta)
    assert res.risk == pytest.approx(ref, abs=1e-9)


def test_linear_activation_is_plain_ridge():
    """sigma linear, beta large: features W x span R^d isotropically, so the risk tends to that of
    plain ridge regression on x, whose closed form for a linear target is known."""
    # plain ridge on x with y = <theta, x> + noise(Delta): min sum (y - b.x)^2 + lam_x |b|^2,
    # deterministic equivalent with isotropic covariance: risk = kappa^2/(1+kappa)^2/(1-df2)
    # + Delta df2/(1-df2), kappa = lam_x/n + kappa/alpha * 1/(1+kappa), df2 = (1/alpha)/(1+kappa)^2.
    alpha, delta, beta = 3.0, 0.2, 400.0
    lam = 0.05
    # f = <b, x> with b = W^T a / sqrt(p); the smallest |a|^2 giving b is p b^T (W^T W)^-1 b
    # = d |b|^2 when W^T W = (p/d) I, so the penalty is lam d |b|^2: lam/alpha per sample.
    from scipy.optimize import brentq

    lam_n = lam / alpha
    kap = brentq(lambda k: k - lam_n - k / alpha / (1 + k), lam_n, 10 + lam_n)
    df2 = 1 / alpha / (1 + kap) ** 2
    ref = (kap**2 / (1 + kap) ** 2 + delta * df2) / (1 - df2)
    res = A.risk(alpha, sigma="linear", target="linear", alpha0=1, eta=0, lam=lam, beta=beta,
                 delta=delta, model="srf")
    assert res.risk == pytest.approx(ref, rel=1e-3)  # O(1/beta) difference to the isotropic limit


@pytest.mark.parametrize("sigma,target,beta", [("tanh", "tanh", 1.0), ("relu", "sin", 2.0),
                                               ("erf", "relu", 0.5)])
def test_risk_at_eta_zero_does_not_depend_on_gamma(sigma, target, beta):
    """THEORY.md §5 open point: at eta_tilde = 0 the split of theta* between v and t is free."""
    risks = [A.risk(3.0, sigma=sigma, target=target, alpha0=1, eta=0, lam=0.01, beta=beta,
                    gamma=g, model="srf").risk for g in (0.0, 0.3, 0.7, 1.0)]
    assert max(risks) - min(risks) < 1e-8


def test_large_lambda_limit():
    for sigma, target, eta in [("tanh", "sin", 1.0), ("tanh", "sin", 0.0), ("relu", "relu", 0.0)]:
        res = A.risk(2.0, sigma=sigma, target=target, alpha0=1, eta=eta, lam=1e7, beta=1,
                     model="srf")
        lim = large_lambda_limit(sigma, target, r=res.r, c=res.c, gamma=res.gamma)
        assert res.risk == pytest.approx(lim, abs=1e-5)
    # odd sigma at eta = 0: the limit is E g^2 (THEORY.md §7)
    assert large_lambda_limit("tanh", "sin", r=0, c=1, gamma=0.5) == pytest.approx(
        (1 - math.exp(-2)) / 2, rel=1e-10)


def test_large_alpha_between_bounds():
    sp = SpikeMapping(r=0.9, c=1.0, gamma=1.0, rho=0.0, scale=1.0, residual_mean=0.0,
                      residual_second_moment=0.0, u_norm=1.0)
    b = risk_bounds("tanh", "sin", r=0.9)
    assert b.lower < b.upper
    for beta in (0.5, 1.0, 4.0):
        res = A.risk(1e4, sigma="tanh", target="sin", alpha0=1, eta=1, lam=1e-4, beta=beta,
                     spike=sp, model="srf")
        assert b.lower - 1e-6 <= res.risk <= b.upper + 1e-3


def test_converged_results_have_small_residual_and_all_fields():
    res = A.risk(1.5, sigma="tanh", target="tanh", alpha0=0.5, eta=1, lam=0.01, beta=2, model="srf")
    assert res.converged and res.residual <= 1e-10
    d = res.as_dict()
    for key in ("alpha", "risk", "converged", "iterations", "residual", "q1", "q2", "V1", "V2",
                "zeta", "psi", "m", "Vhat1", "Vhat2", "qhat1", "qhat2", "zetahat", "psihat",
                "sigma", "target", "alpha0", "eta", "lam", "beta", "delta", "r", "c", "gamma"):
        assert key in d


def test_interpolation_peak_without_ridge_is_flagged_not_reported():
    res = A.risk(1.0, sigma="tanh", target="tanh", alpha0=1, eta=0, lam=0.0, beta=1.0, model="srf")
    assert not res.converged and math.isnan(res.risk) and math.isnan(res.q1)
    with pytest.raises(A.ConvergenceError):
        A.risk(1.0, sigma="tanh", target="tanh", alpha0=1, eta=0, lam=0.0, beta=1.0, strict=True,
               model="srf")


def test_ridgeless_away_from_peak_converges():
    res = A.risk(3.0, sigma="tanh", target="tanh", alpha0=1, eta=0, lam=0.0, beta=1.0, model="srf")
    assert res.converged
    ref = rf_ridge_risk(3.0, sigma="tanh", target="tanh", lam=1e-9, beta=1.0)
    assert res.risk == pytest.approx(ref, abs=1e-6)


def test_max_iter_is_reported_as_unconverged():
    res = A.risk(2.0, sigma="tanh", target="tanh", alpha0=1, eta=1, lam=0.01,
                 solver=A.SolverConfig(max_iter=1, anderson=0), model="srf")
    assert not res.converged and math.isnan(res.risk) and res.status == "max_iter"


@pytest.mark.parametrize("kw,match", [
    (dict(alpha=-1.0), "alpha must be > 0"), (dict(alpha0=0.0), "alpha0 must be > 0"),
    (dict(beta=0.0), "beta must be > 0"), (dict(lam=-0.1), "lam must be >= 0"),
    (dict(delta=-1.0), "delta must be >= 0"), (dict(eta=-1.0), "eta must be >= 0"),
    (dict(alpha=float("nan")), "alpha must be > 0 and finite"), (dict(lam=float("inf")), "finite"),
    (dict(sigma="swish"), "unknown function"),
])
def test_bad_input(kw, match):
    args = dict(alpha=2.0, sigma="tanh", target="tanh", alpha0=1.0, eta=1.0, lam=0.01, beta=1.0)
    args.update(kw)
    alpha = args.pop("alpha")
    with pytest.raises(ValueError, match=match):
        A.risk(alpha, **args)


def test_user_function_returning_nan_is_an_error():
    with pytest.raises(ValueError, match="non-finite"):
        A.risk(2.0, sigma=lambda z: np.log(z), target="tanh", alpha0=1, eta=1, lam=0.01,
               model="srf")


def test_curve_dataframe_and_warm_starts():
    alphas = np.linspace(0.2, 5, 25)
    df = A.risk_curve(alphas, sigma="tanh", target="tanh", alpha0=2, eta=1, lam=0.01, beta=1,
                      progress=False, model="srf")
    assert list(df.columns[:4]) == ["alpha", "risk", "converged", "iterations"]
    np.testing.assert_allclose(df["alpha"], alphas)
    assert df["converged"].all()
    one = A.risk(alphas[7], sigma="tanh", target="tanh", alpha0=2, eta=1, lam=0.01, model="srf")
    assert df["risk"].iloc[7] == pytest.approx(one.risk, abs=1e-9)


def test_feature_learning_beats_random_features_for_single_index():
    kw = dict(sigma="tanh", target="tanh", alpha0=2, lam=0.01, beta=1)
    assert A.risk(3, eta=1, **kw).risk < A.risk(3, eta=0, **kw).risk


def test_ridgeless_interpolating_regime_is_the_small_lam_limit():
    """lam = 0 with alpha < beta: reported as the lam -> 0+ limit, consistent with small lam."""
    res = A.risk(0.5, sigma="tanh", target="tanh", alpha0=1, eta=1, lam=0.0, beta=1.0, model="srf")
    assert res.converged and "ridgeless" in res.message
    small = A.risk(0.5, sigma="tanh", target="tanh", alpha0=1, eta=1, lam=1e-7, beta=1.0,
                   model="srf")
    assert res.risk == pytest.approx(small.risk, abs=1e-5)
    ref = rf_ridge_risk(0.5, sigma="tanh", target="tanh", lam=1e-7, beta=1.0)
    rf0 = A.risk(0.5, sigma="tanh", target="tanh", alpha0=1, eta=0, lam=0.0, beta=1.0, model="srf")
    assert rf0.risk == pytest.approx(ref, abs=1e-5)
