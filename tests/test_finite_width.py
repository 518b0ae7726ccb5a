"""The finite-width theory (docs/DERIVATIONS.md §8): limits, collapse, an exact linear check."""

import math

import numpy as np
import pytest

import asymptotics as A
from asymptotics.api.risk import check_width
from asymptotics.models.rf_ridge import rf_ridge_risk
from validation.experiments.bias_slopes.channels import sphere_frame

TT = dict(sigma="tanh", target="tanh", alpha0=2.0, lam=0.01, beta=1.0, model="srf")


@pytest.mark.parametrize("eta", [0.003, 0.1, 1.0])
def test_large_p_is_the_limit(eta):
    """p -> infinity: eps = 1/(A p V2) and the variance term vanish like 1/(r^2 p); the limit is
    continuous (r sqrt(p) = 1e5 gives it to 1e-9)."""
    r_inf = A.risk(2.0, eta=eta, **TT)
    p = 1e10 / r_inf.r**2
    r_big = A.risk(2.0, eta=eta, p=p, **TT)
    assert r_inf.converged and r_big.converged
    assert r_big.risk == pytest.approx(r_inf.risk, abs=1e-9)
    gaps = [A.risk(2.0, eta=eta, p=q, **TT).risk - r_inf.risk for q in (p / 1e4, p / 1e2)]
    assert gaps[1] / gaps[0] == pytest.approx(1e-2, rel=0.05)
    assert r_inf.p == math.inf and r_big.p == p
    assert A.risk(2.0, eta=eta, p=math.inf, **TT).risk == r_inf.risk


@pytest.mark.parametrize("sigma,target,p", [("tanh", "tanh", 100), ("erf", "sin", 1000),
                                            ("relu", "tanh", 300)])
def test_eta_zero_is_random_features_at_every_p(sigma, target, p):
    """eta = 0 and a centred target (b0h = 0): m = 0, the independent RF ridge formula."""
    res = A.risk(1.5, sigma=sigma, target=target, alpha0=2.0, eta=0.0, lam=0.05, beta=1.0, p=p,
                 model="srf")
    ref = rf_ridge_risk(1.5, sigma=sigma, target=target, lam=0.05, beta=1.0)
    assert res.risk == pytest.approx(ref, abs=1e-9)


def test_eta_zero_with_a_mean_is_an_order_one_over_p_correction():
    """relu/relu at eta = 0: the constant is learned at the ridge price, a 1/p correction."""
    kw = dict(sigma="relu", target="relu", alpha0=2.0, eta=0.0, lam=0.01, beta=1.0, model="srf")
    r_inf = A.risk(2.0, **kw).risk
    gaps = [A.risk(2.0, p=p, **kw).risk - r_inf for p in (100, 1000, 10000)]
    assert gaps[0] > 0
    assert gaps[1] / gaps[0] == pytest.approx(0.1, rel=0.05)
    assert gaps[2] / gaps[1] == pytest.approx(0.1, rel=0.05)


def test_crossover_between_random_features_and_the_limit():
    """Small r sqrt(p): close to RF; large: close to p = infinity; monotone in between."""
    rpe = A.build_problem(eta=1.0, **TT).spike.r
    p = 1000
    rf = A.risk(2.0, eta=0.0, **TT).risk
    risks = []
    for x in (0.03, 0.3, 1.0, 3.0, 30.0):
        eta = x / (math.sqrt(p) * rpe)
        risks.append((A.risk(2.0, eta=eta, p=p, **TT).risk, A.risk(2.0, eta=eta, **TT).risk))
    assert risks[0][0] == pytest.approx(rf, rel=2e-3)
    assert risks[-1][0] == pytest.approx(risks[-1][1], rel=2e-2)
    vals = [r for r, _ in risks]
    assert all(a > b for a, b in zip(vals, vals[1:], strict=False))


@pytest.mark.parametrize("x", [0.3, 1.0, 3.0])
def test_collapse_on_r_sqrt_p(x):
    """At fixed r sqrt(p) the finite-p risk converges as p grows (the scale of §5)."""
    rpe = A.build_problem(eta=1.0, **TT).spike.r
    vals = [A.risk(2.0, eta=x / (math.sqrt(p) * rpe), p=p, **TT).risk for p in (1e4, 1e6, 1e8)]
    assert abs(vals[0] - vals[2]) < 2e-4
    assert abs(vals[1] - vals[2]) < 2e-6
    # and it differs from the p = infinity value at the same eta by O(1)
    assert abs(vals[2] - A.risk(2.0, eta=x / (1e4 * rpe), **TT).risk) > 5e-3


def _linear_srf_mc(d, p, n, lam, r, c, gamma, reps, seed):
    """Exact test error of ridge on linear sRF features W1 x, W1 = sqrt(c) W0 + r 1 v^T."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(reps):
        W0, th, t = sphere_frame(rng, p, d)
        v = gamma * th + math.sqrt(1 - gamma**2) * t
        W1 = math.sqrt(c) * W0 + r * np.outer(np.ones(p), v)
        X = rng.standard_normal((n, d))
        F = X @ W1.T / math.sqrt(p)
        a = np.linalg.solve(F.T @ F + lam * np.eye(p), F.T @ (X @ th))
        out.append(np.sum((th - W1.T @ a / math.sqrt(p)) ** 2))
    out = np.asarray(out)
    return out.mean(), out.std(ddof=1) / math.sqrt(reps)


def test_linear_srf_monte_carlo_follows_the_finite_p_theory():
    """sigma = g = linear: the sRF test error is exact, and r sqrt(p) = 1 sits in the middle of
    the crossover (p = infinity and RF are each > 20 s.e. away). 100 draws: the finite-p theory
    within the Student quantile of 99 degrees of freedom at a two-sided 1e-3 (3.39 s.e.), no bias
    allowance (the theory is at the simulated p)."""
    from scipy import stats

    d, beta, alpha, lam = 400, 0.5, 1.0, 0.01
    p, n = int(beta * d), int(alpha * d)
    kw = dict(sigma="linear", target="linear", alpha0=2.0, lam=lam, beta=beta, model="srf")
    eta = 1.0 / (math.sqrt(p) * A.build_problem(eta=1.0, **kw).spike.r)
    sp = A.build_problem(eta=eta, **kw).spike
    mean, se = _linear_srf_mc(d, p, n, lam, sp.r, sp.c, sp.gamma, reps=100, seed=5)
    theory_p = A.risk(alpha, eta=eta, p=p, **kw).risk
    assert abs(theory_p - mean) <= stats.t.ppf(1 - 5e-4, 99) * se, (theory_p, mean, se)
    assert abs(A.risk(alpha, eta=eta, **kw).risk - mean) > 20 * se
    assert abs(A.risk(alpha, eta=0.0, **kw).risk - mean) > 20 * se


@pytest.mark.parametrize("bad", [0, -5, 0.5, math.nan, -math.inf])
def test_bad_width_is_a_clear_error(bad):
    with pytest.raises(ValueError, match="p must be >= 1"):
        A.risk(2.0, eta=0.1, p=bad, **TT)


@pytest.mark.parametrize("bad", ["1000", True, [1000]])
def test_width_must_be_a_number(bad):
    with pytest.raises(TypeError, match="p must be a real number"):
        check_width(bad)


def test_risk_curve_carries_p():
    df = A.risk_curve([1.0, 2.0], eta=0.1, p=2000, progress=False, **TT)
    assert (df["p"] == 2000).all() and df["converged"].all()
    assert df["risk"].iloc[1] == pytest.approx(A.risk(2.0, eta=0.1, p=2000, **TT).risk, abs=1e-9)


def test_cli_width(capsys):
    from asymptotics.cli.curve import main

    assert main(["curve", "--csv", "--alpha", "2", "--eta", "0.1", "--p", "1000", "--quiet"]) == 0
    out = capsys.readouterr().out
    value = float(out.splitlines()[1].split(",")[1])
    # the command line's default model is the network
    assert value == pytest.approx(A.risk(2.0, eta=0.1, p=1000, **dict(TT, model="network")).risk,
                                  rel=1e-10)
    with pytest.raises(SystemExit) as exc:
        main(["curve", "--alpha", "2", "--p", "0.5"])
    assert exc.value.code == 2


def test_experiment_eta_gives_the_requested_r_sqrt_p():
    from validation.matrix.finite_width import PAIRS, eta_for

    for pair in PAIRS:
        eta = eta_for(pair, 3.0, 2000)
        assert A.build_problem(eta=eta, **pair).spike.r * math.sqrt(2000) == pytest.approx(3.0)


@pytest.mark.slow
def test_srf_simulation_follows_the_finite_p_theory():
    """sRF Monte Carlo at d = p = 1000, r sqrt(p) = 1 (tanh/tanh), 8 seeds: the finite-p theory
    within the Student quantile of 7 degrees of freedom at a two-sided 1e-3 (5.41 s.e.), no bias
    allowance; the p = infinity theory and random features each beyond 10 s.e."""
    from scipy import stats

    from validation.protocol.simulator import Setting, simulate_curve

    rpe = A.build_problem(eta=1.0, **TT).spike.r
    eta = 1.0 / (math.sqrt(1000) * rpe)
    s = Setting(model="srf", sigma="tanh", target="tanh", alpha=2.0, alpha0=2.0, eta=eta,
                lam=0.01, beta=1.0, d=1000, estimator="cv")
    sim = simulate_curve(s, [2.0], seeds=8, seed=11)[0]
    t = stats.t.ppf(1 - 5e-4, len(sim.values) - 1)
    assert abs(A.risk(2.0, eta=eta, p=1000, **TT).risk - sim.mean) <= t * sim.se
    assert abs(A.risk(2.0, eta=eta, **TT).risk - sim.mean) > 10 * sim.se
    assert abs(A.risk(2.0, eta=0.0, **TT).risk - sim.mean) > 10 * sim.se
