"""The K-group, r-spike theory (docs/THEORY.md §10) against independent references: the one-spike
sRF theory (K = r = 1, at p = infinity and at finite p), symmetries that must hold exactly (odd
sigma with groups +u and -u, parallel loadings), random features (u = 0, the independent ridge
formula of asymptotics.models.rf_ridge) and exact p x p linear algebra for the deterministic
resolvent."""

from __future__ import annotations

import math

import numpy as np
import pytest

import asymptotics as A
from asymptotics.api.points import ConvergenceError
from asymptotics.models.rf_ridge import rf_ridge_risk
from asymptotics.spiked import (
    risk_spiked,
    risk_spiked_curve,
    risk_spiked_grid,
    spike_contributions,
)
from asymptotics.spiked.empirical import group_labels, sphere_rows

BASE = dict(lam=0.01, beta=1.0)


@pytest.mark.parametrize("sigma,target,beta,alpha", [
    ("tanh", "tanh", 1.0, 0.5), ("tanh", "tanh", 1.0, 2.0), ("relu", "tanh", 0.7, 1.5),
    ("erf", "relu", 1.5, 2.5), ("relu", "relu", 1.0, 3.0), ("erf", "z**3 - 3*z", 2.0, 1.0),
])
def test_one_group_one_spike_is_the_srf_theory(sigma, target, beta, alpha):
    """K = r = 1, loadings [[r]], bulk [c], overlaps [[gamma]] of the one-step mapping: the
    sRF equations of THEORY.md §5 (asymptotics.risk(model="srf")) to 1e-8."""
    ref = A.risk(alpha, sigma=sigma, target=target, alpha0=2.0, eta=1.0, lam=0.01, beta=beta,
                 model="srf")
    res = risk_spiked(alpha, sigma=sigma, target=target, loadings=[[ref.r]], bulk=[ref.c],
                      fractions=[1.0], overlaps=[[ref.gamma]], lam=0.01, beta=beta)
    assert ref.converged and res.converged
    assert abs(res.risk - ref.risk) <= 1e-8


@pytest.mark.parametrize("sigma,target,p", [("tanh", "tanh", 300), ("relu", "relu", 100)])
def test_one_group_one_spike_at_finite_width(sigma, target, p):
    """The finite-p closure of the mean channel (THEORY.md §10.6) at K = r = 1 is the one-spike
    finite-width theory (docs/DERIVATIONS.md §8), omega = 1, at eta_tilde = 0.1 (r sqrt p ~ 1)."""
    ref = A.risk(2.0, sigma=sigma, target=target, alpha0=2.0, eta=0.1, lam=0.01, beta=1.0,
                 model="srf", p=p)
    res = risk_spiked(2.0, sigma=sigma, target=target, loadings=[[ref.r]], bulk=[ref.c],
                      fractions=[1.0], overlaps=[[ref.gamma]], lam=0.01, beta=1.0, p=p)
    inf = A.risk(2.0, sigma=sigma, target=target, alpha0=2.0, eta=0.1, lam=0.01, beta=1.0,
                 model="srf")
    assert abs(res.risk - ref.risk) <= 1e-8
    assert abs(ref.risk - inf.risk) > 1e-3  # the finite-p effect is there


@pytest.mark.parametrize("c", [0.02, 0.5])
def test_one_group_one_spike_given_spike(c):
    """A spike (r, c, gamma) given directly, down to a nearly empty bulk (the kappa rule is split
    at relu's kink, as the one-spike rule does for c < 0.05)."""
    from asymptotics.step.srf import SpikeMapping

    sp = SpikeMapping(0.9, c, 0.8, 0.6, math.nan, math.nan, math.nan, math.nan)
    ref = A.risk(1.5, sigma="relu", target="tanh", model="srf", spike=sp, lam=0.01, beta=1.0)
    res = risk_spiked(1.5, sigma="relu", target="tanh", loadings=[[0.9]], bulk=[c],
                      fractions=[1.0], overlaps=[[0.8]], lam=0.01, beta=1.0)
    assert abs(res.risk - ref.risk) <= 1e-8


@pytest.mark.parametrize("alpha", [0.5, 2.0])
def test_one_group_one_spike_with_label_noise(alpha):
    """Label noise Delta enters the training residual only (E + Delta in Qhat): the sRF theory
    with delta = 0.3 (its mapping includes the noise too)."""
    ref = A.risk(alpha, model="srf", lam=0.01, beta=1.0, delta=0.3)
    res = risk_spiked(alpha, sigma="tanh", target="tanh", loadings=[[ref.r]], bulk=[ref.c],
                      fractions=[1.0], overlaps=[[ref.gamma]], lam=0.01, beta=1.0, delta=0.3)
    assert abs(res.risk - ref.risk) <= 1e-8


def test_gamma_override_is_the_unlearned_one_spike_part():
    """Gamma = 0 (the target entirely outside the learned directions): K = 1, r = 2 with loadings
    u is r = 1 along u/|u|, and that is the sRF theory at gamma = 0."""
    ref = A.risk(1.5, sigma="tanh", target="tanh", alpha0=2.0, eta=1.0, lam=0.01, beta=1.0,
                 model="srf", gamma=0.0)
    u = ref.r * np.array([0.6, 0.8])
    res = risk_spiked(1.5, sigma="tanh", target="tanh", loadings=[u], bulk=[ref.c],
                      fractions=[1.0], overlaps=[[0.0], [0.0]], lam=0.01, beta=1.0)
    assert abs(res.risk - ref.risk) <= 1e-8


@pytest.mark.parametrize("sigma,p", [("tanh", None), ("erf", None), ("tanh", 100)])
def test_odd_sigma_with_opposite_groups_is_one_group(sigma, p):
    """Odd sigma: ridge is invariant under flipping the sign of features, and sigma(-u.k + ...)
    = -sigma(u.k - ...); groups +u and -u are one group with loadings u (r = 2, k = 2), at any
    width (the finite-p closure of THEORY.md §10.6 keeps the symmetry)."""
    u = [0.7, -0.4]
    kw = dict(sigma=sigma, target="z1*z2 + tanh(z1)", bulk=[1.1, 1.1],
              overlaps=[[0.8, 0.1], [0.3, 0.6]], p=p, **BASE)
    two = risk_spiked(1.2, loadings=[u, [-0.7, 0.4]], fractions=[0.3, 0.7], **kw)
    one = risk_spiked(1.2, loadings=[u], fractions=[1.0], **{**kw, "bulk": [1.1]})
    assert two.converged and one.converged
    assert abs(two.risk - one.risk) <= 1e-8


def test_identical_groups_are_one_group():
    """Splitting one group into three identical ones (fractions 0.2, 0.5, 0.3) changes nothing."""
    kw = dict(sigma="relu", target="z1 + z1*z2", overlaps=[[0.6, 0.2], [0.3, 0.7]], **BASE)
    one = risk_spiked(1.4, loadings=[[0.5, -0.4]], bulk=[1.2], fractions=[1.0], **kw)
    three = risk_spiked(1.4, loadings=[[0.5, -0.4]] * 3, bulk=[1.2] * 3,
                        fractions=[0.2, 0.5, 0.3], **kw)
    assert one.converged and three.converged
    assert abs(one.risk - three.risk) <= 1e-8


def test_parallel_loadings_are_one_spike():
    """All u_g parallel to a unit e of R^2: r = 1 along e with overlaps e^T Gamma; the direction
    of V orthogonal to e becomes an unlearned one (through the zeta feedback, THEORY.md §10.5)."""
    e = np.array([0.6, 0.8])
    a = np.array([0.9, -0.3, 0.5])
    gam = np.array([[0.5], [0.7]])
    kw = dict(sigma="relu", target="tanh", bulk=[1.0, 1.3, 0.8], fractions=[0.5, 0.2, 0.3],
              **BASE)
    r2 = risk_spiked(1.7, loadings=np.outer(a, e), overlaps=gam, **kw)
    r1 = risk_spiked(1.7, loadings=a[:, None], overlaps=[[float(e @ gam[:, 0])]], **kw)
    assert r2.converged and r1.converged
    assert abs(r2.risk - r1.risk) <= 1e-8


@pytest.mark.parametrize("sigma,target", [("tanh", "tanh"), ("erf", "sin(2*z)")])
def test_no_loadings_is_random_features(sigma, target):
    """u = 0 (three groups, two spikes, any Gamma): random features, the independent ridge formula
    of asymptotics.models.rf_ridge (THEORY.md §7); and the risk does not depend on Gamma."""
    ref = rf_ridge_risk(1.3, sigma=sigma, target=target, lam=0.05, beta=1.2)
    out = []
    for gam in ([[0.0], [0.0]], [[0.6], [0.7]]):
        res = risk_spiked(1.3, sigma=sigma, target=target, loadings=np.zeros((3, 2)),
                          bulk=[1.0] * 3, fractions=[0.2, 0.5, 0.3], overlaps=gam, lam=0.05,
                          beta=1.2)
        out.append(res.risk)
        assert abs(res.risk - ref) <= 1e-7
    assert abs(out[0] - out[1]) <= 1e-10


def test_callable_target_is_the_expression():
    """A callable of k arguments is the same target as the expression in z1..zk (one that is not
    a polynomial in any variable, so that both get the same quadrature)."""
    kw = dict(sigma="tanh", loadings=[[0.3, -0.2]], bulk=[1.1], fractions=[1.0],
              overlaps=[[0.8, 0.1], [0.3, 0.6]], **BASE)
    a = risk_spiked(1.2, target=lambda z1, z2: np.sin(z1 + z2) + np.tanh(z1), **kw)
    b = risk_spiked(1.2, target="sin(z1 + z2) + tanh(z1)", **kw)
    assert a.converged and a.risk == pytest.approx(b.risk, abs=1e-12)


@pytest.mark.parametrize("K,r,k,beta", [(2, 2, 1, 1.0), (3, 2, 2, 0.7), (3, 1, 2, 1.5)])
def test_deterministic_resolvent_against_exact_p_by_p(K, r, k, beta):
    """THEORY.md §10.4 against §10.3 computed exactly with sampled bulks (rows on the sphere,
    eight draws at d = 300): every entry of the self-averaging traces (V1, V2, and Q without the
    spike fields) and of the fields' channels (Q, zeta, psi) on average over the draws within
    the Student quantile of 7 degrees of freedom at a two-sided 1e-3 per entry times its s.e.,
    plus the finite-d bias at d = 300 measured as c/d (validation/reports/BIAS_SLOPES.md:
    (|c| + 3 s.e.)/300; it was 10/d of the largest entry, unmeasured)."""
    from scipy import stats

    from validation.experiments import bias_slopes as BS
    from validation.experiments.bias_slopes.blocks import block_draw, block_theory, hats

    st = next(b for b in BS.BLOCKS if (b.K, b.r, b.k, b.beta) == (K, r, k, beta))
    d, draws = 300, 8
    det = block_theory(st, d)
    rng = hats(st, d)[0]  # the generator after the conjugate variables: it draws the bulks
    runs = [block_draw(st, d, rng) for _ in range(draws)]
    t = stats.t.ppf(1 - 5e-4, draws - 1)
    slopes = {s.quantity: s for s in BS.fit_slopes(BS.load_runs().query("setting == @st.name"))}
    assert set(slopes) == set(det) == set(runs[0])
    for q, lim in det.items():
        x = np.array([run[q] for run in runs])
        band = t * x.std(ddof=1) / math.sqrt(draws) + slopes[q].allowance(d)
        assert abs(x.mean() - lim) <= band, (q, x.mean(), lim, band)


def test_curve_contributions_and_strict():
    """The curve has one row per alpha with every parameter; zeroing a learned direction changes
    the risk; an unconverged point is NaN (max_iter = 1), and strict=True raises."""
    kw = dict(sigma="tanh", target="z1 + z1*z2", loadings=[[0.8, 0.0], [0.0, 0.8]],
              bulk=[1.0, 1.0], fractions=[0.5, 0.5], overlaps=[[1.0, 0.0], [0.0, 1.0]], **BASE)
    grid = risk_spiked_grid([0.5, 1.0], [0.01, 0.1], **kw)
    assert len(grid) == 4 and list(grid.lam) == [0.01, 0.01, 0.1, 0.1] and grid.converged.all()
    df = risk_spiked_curve([0.5, 1.0, 2.0], **kw)
    assert list(df.alpha) == [0.5, 1.0, 2.0] and df.converged.all()
    assert {"loadings", "bulk", "fractions", "overlaps", "lam", "beta", "delta", "p"} <= set(df)
    contrib = spike_contributions(2.0, **kw)
    assert contrib["all"] < contrib["without_2"] < contrib["none"]
    # four groups whose mu0_g(k) are nearly collinear once a direction is removed: the mean
    # channel is an ill-conditioned least-squares problem, solved stably
    four = dict(kw, target="z1*z2 + tanh(z1)", loadings=[[0.8, 0.1], [-0.5, 0.6], [0.2, -0.7],
                                                        [0.4, 0.4]],
                bulk=[1.0, 1.1, 0.9, 1.2], fractions=[0.25] * 4, overlaps=[[0.8, 0.1], [0.2, 0.7]])
    assert all(np.isfinite(v) for v in spike_contributions(0.5, **four).values())
    from asymptotics.equations.solver import SolverConfig

    bad = risk_spiked(2.0, solver=SolverConfig(max_iter=1), **kw)
    assert not bad.converged and math.isnan(bad.risk)
    with pytest.raises(ConvergenceError):
        risk_spiked(2.0, solver=SolverConfig(max_iter=1), strict=True, **kw)


@pytest.mark.parametrize("change,message", [
    (dict(fractions=[0.5, 0.4]), "fractions must sum to 1, got 0.9"),
    (dict(bulk=[1.0, -1.0]), "bulk must be >= 0"),
    (dict(bulk=[1.0]), "bulk must have K = 2 entries"),
    (dict(overlaps=[[0.9], [0.9]]), "|Gamma_1| = 1.27279"),
    (dict(overlaps=[[0.9, 0.1]]), "overlaps must be r x k = 2 x 1"),
    (dict(lam=-1.0), "lam must be >= 0"),
    (dict(beta=0.0), "beta must be > 0"),
    (dict(loadings=[1.0, 2.0]), "loadings must be a K x r matrix"),
])
def test_clear_errors(change, message):
    kw = dict(sigma="tanh", target="tanh", loadings=[[0.5, 0.1], [0.2, 0.3]], bulk=[1.0, 1.0],
              fractions=[0.5, 0.5], overlaps=[[0.6], [0.3]], **BASE)
    with pytest.raises(ValueError, match=message.replace("|", r"\|").replace(".", r"\.")):
        risk_spiked(1.0, **{**kw, **change})
    with pytest.raises(ValueError, match="alpha must be > 0"):
        risk_spiked(0.0, **kw)


@pytest.mark.parametrize("alpha,beta", [(0.5, 1.0), (2.0, 1.0), (0.5, 2.0), (2.0, 2.0)])
def test_ridgeless_limit_is_the_srf_one(alpha, beta):
    """lam = 0: directly where the equations have a finite solution, else the lam -> 0+ ladder
    (Richardson) or the divergence at the interpolation peak alpha = beta, as the one-spike
    solver (asymptotics.api.points) decides."""
    ref = A.risk(alpha, model="srf", lam=0.0, beta=beta)
    res = risk_spiked(alpha, sigma="tanh", target="tanh", loadings=[[ref.r]], bulk=[ref.c],
                      fractions=[1.0], overlaps=[[ref.gamma]], lam=0.0, beta=beta)
    assert res.status == ref.status and res.converged == ref.converged
    if ref.converged:
        assert abs(res.risk - ref.risk) <= 1e-8
    else:
        assert math.isnan(res.risk)


@pytest.mark.parametrize("alpha", [0.5, 2.0, 5.0])
def test_linear_sigma_against_linear_ridge(alpha):
    """sigma(z) = z, three groups, two spikes, a two-index target with correlated directions
    (theta_1 . theta_2 = Gamma_1 . Gamma_2 = 0.2): the features are exactly Gaussian, and ridge on
    them follows the deterministic equivalent of linear ridge for the sampled W (Hastie,
    Montanari, Rosset, Tibshirani 2022, arXiv 1903.08560; independent of the replica equations,
    validation/experiments/bias_slopes/ridge.py). Mean of eight draws at d = 400 within the
    Student quantile of 7 degrees of freedom at a two-sided 1e-3 times its s.e., plus the
    finite-d bias at d = 400 measured as c/d (validation/reports/BIAS_SLOPES.md:
    (|c| + 3 s.e.)/400; it was 10/d relative, unmeasured)."""
    from scipy import stats

    from validation.experiments import bias_slopes as BS
    from validation.experiments.bias_slopes import ridge

    th = ridge.theory("linear", 0)[f"risk@{alpha:g}"]
    d, draws = 400, 8
    rng = np.random.default_rng(1)
    ex = np.array([ridge.linear_draw(d, rng)[f"risk@{alpha:g}"] for _ in range(draws)])
    se = ex.std(ddof=1) / math.sqrt(draws)
    allow = BS.slope("linear-3groups", f"risk@{alpha:g}").allowance(d)
    assert abs(th - ex.mean()) <= stats.t.ppf(1 - 5e-4, draws - 1) * se + allow, (
        th, ex.mean(), se, allow)


def test_finite_width_against_linear_ridge():
    """THEORY.md §10.6 with two groups: sigma(z) = z, the target z = theta . x fully learned
    (Gamma = 1) and loadings u_g ~ 1/sqrt(p). At p = infinity the free mean channel fits the
    target exactly (R = 0); at the width p the mean channel's price leaves R ~ 0.06, which the
    linear-ridge deterministic equivalent for the sampled W (d = p = 200, 20 draws) confirms:
    within the Student quantile of 19 degrees of freedom at a two-sided 1e-3 times the s.e.,
    plus the finite-d bias at d = 200 measured as c/d against the theory at p = d
    (validation/reports/BIAS_SLOPES.md: (|c| + 3 s.e.)/200; it was 10/d relative,
    unmeasured)."""
    from scipy import stats

    from validation.experiments import bias_slopes as BS
    from validation.experiments.bias_slopes import ridge

    d = p = 200
    kw = dict(sigma="z", target="z", loadings=np.array(ridge.U2) / math.sqrt(p),
              bulk=np.array(ridge.C2), fractions=np.array(ridge.PI2), overlaps=[[1.0]],
              lam=ridge.LAM, beta=1.0)
    inf = risk_spiked(2.0, **kw)
    fin = risk_spiked(2.0, p=p, **kw)
    assert inf.converged and abs(inf.risk) <= 1e-10
    rng = np.random.default_rng(3)
    ex = np.array([ridge.finite_width_draw(d, rng)["risk@2"] for _ in range(20)])
    se = ex.std(ddof=1) / math.sqrt(len(ex))
    allow = BS.slope("finite-width-2groups", "risk@2").allowance(d)
    assert fin.converged and fin.risk > 0.03
    assert abs(fin.risk - ex.mean()) <= stats.t.ppf(1 - 5e-4, len(ex) - 1) * se + allow, (
        fin.risk, ex.mean(), se, allow)


def test_ridgeless_peak_diverges():
    """At lam = 0 and alpha = beta the Q-system is singular: status "diverged", risk NaN (the
    numbers next to it, alpha = 1.001 and 2, are finite)."""
    kw = dict(sigma="relu", target="z1*z2", loadings=[[0.8, 0.2], [0.1, -0.9]], bulk=[1.0, 1.2],
              fractions=[0.6, 0.4], overlaps=[[0.9, 0.1], [0.1, 0.9]], lam=0.0, beta=1.0)
    peak = risk_spiked(1.0, **kw)
    assert not peak.converged and peak.status == "diverged" and math.isnan(peak.risk)
    near, far = risk_spiked(1.001, **kw), risk_spiked(2.0, **kw)
    assert near.converged and far.converged and near.risk > 100 * far.risk


def test_semi_empirical_one_group_is_the_one_spike_semi_empirical_theory():
    """The semi-empirical form (THEORY.md §10.3) on a given first layer W = sqrt(c) G + r 1 v^T,
    K = r = 1, is the one-spike theory of that layer (asymptotics.risk(model="srf",
    measure=from_weights(W, v, theta)); its spike r = mean(W v), c = tr(W Pi W^T)/p and the
    centred bulk), to 1e-8."""
    from asymptotics.measures.spectral import from_weights
    from asymptotics.spiked.semi_empirical import risk_spiked_semi_empirical

    rng = np.random.default_rng(0)
    d = p = 200
    Q = np.linalg.qr(rng.standard_normal((d, 2)))[0]
    v, t = Q[:, 0], Q[:, 1]
    W = math.sqrt(1.1) * sphere_rows(rng, p, d) + 0.6 * np.outer(np.ones(p), v)
    theta = 0.7 * v + math.sqrt(1 - 0.49) * t
    meas = from_weights(W, v, theta)
    r_e = float(np.mean(W @ v))
    B = W - np.outer(W @ v, v)
    c_e = float(np.sum(B * B) / p)
    G = (W - r_e * np.outer(np.ones(p), v)) / math.sqrt(c_e)
    for alpha in (0.5, 2.0):
        ref = A.risk(alpha, sigma="tanh", target="tanh", model="srf", measure=meas, lam=0.01,
                     beta=1.0)
        res = risk_spiked_semi_empirical(alpha, G=G, labels=np.zeros(p, dtype=int),
                                         V=v[:, None], T=t[:, None], sigma="tanh",
                                         target="tanh", loadings=[[r_e]], bulk=[c_e],
                                         overlaps=[[meas.gamma]], lam=0.01)
        assert res.converged and abs(res.risk - ref.risk) <= 1e-8


def test_semi_empirical_opposite_groups_on_one_bulk():
    """Semi-empirical, odd sigma: groups +u and -u on a bulk G are one group with u on the bulk
    whose second group's rows are negated (exactly, for the sampled G)."""
    from asymptotics.spiked.semi_empirical import risk_spiked_semi_empirical

    rng = np.random.default_rng(1)
    d = p = 160
    G = sphere_rows(rng, p, d)
    Q = np.linalg.qr(rng.standard_normal((d, 4)))[0]
    lab = group_labels(np.array([0.4, 0.6]), p)
    u = np.array([0.7, -0.4])
    kw = dict(sigma="tanh", target="z1*z2 + tanh(z1)", overlaps=[[0.8, 0.1], [0.3, 0.6]],
              lam=0.01, V=Q[:, :2], T=Q[:, 2:])
    two = risk_spiked_semi_empirical(1.2, G=G, labels=lab, loadings=[u, -u], bulk=[1.1, 1.1],
                                     **kw)
    flipped = G * np.where(lab == 1, -1.0, 1.0)[:, None]
    one = risk_spiked_semi_empirical(1.2, G=flipped, labels=np.zeros(p, dtype=int),
                                     loadings=[u], bulk=[1.1], **kw)
    assert two.converged and one.converged
    assert abs(two.risk - one.risk) <= 1e-8
