"""The K-group, r-spike simulator (validation.spiked): input validation, reproducible seeds, the
K = r = 1 reduction to the project's sRF simulator, and (slow) two campaign settings against the
theory."""

from __future__ import annotations

import math

import numpy as np
import pytest

from validation.protocol.simulator import Setting, simulate_curve
from validation.spiked import campaign
from validation.spiked.simulator import (
    SpikedSetting,
    directions,
    simulate_spiked,
    spiked_weights,
)

BASE = dict(sigma="tanh", target="tanh(z1)", loadings=[[1.0]], bulk=[1.2], fractions=[1.0],
            overlaps=[[1.0]], alpha=1.5, lam=0.01, beta=1.0, d=120)


def _setting(**changes) -> SpikedSetting:
    return SpikedSetting(**{**BASE, **changes})


@pytest.mark.parametrize("changes, message", [
    (dict(sigma="nope"), "sigma"),
    (dict(target="z1*"), "target"),
    (dict(loadings=[1.0]), "loadings must be a non-empty 2-d"),
    (dict(loadings=[[math.nan]]), "loadings must be finite"),
    (dict(bulk=[1.0, 1.0]), "bulk needs one variance per group"),
    (dict(bulk=[0.0]), "bulk variances c_g must be > 0"),
    (dict(fractions=[0.5]), "fractions must be > 0 and sum to 1"),
    (dict(loadings=[[1.0], [2.0]], bulk=[1, 1], fractions=[1.0]), "fractions needs one entry"),
    (dict(overlaps=[[1.0, 0.0]]), "overlaps must be r x k = 1 x 1"),
    (dict(target="z1*z2", overlaps=[[0.9, 0.9]], loadings=[[1.0]]), None),
    (dict(overlaps=[[1.5]]), "norm <= 1"),
    (dict(alpha=0.0), "alpha must be > 0"),
    (dict(lam=-1.0), "lam must be >= 0"),
    (dict(beta=-2.0), "beta must be > 0"),
    (dict(delta=-0.1), "delta must be >= 0"),
    (dict(d=10.5), "d must be an integer"),
    (dict(n_test=-1), "n_test must be an integer"),
    (dict(loadings=[[1.0], [1.0], [1.0]], bulk=[1, 1, 1], fractions=[0.998, 0.001, 0.001],
          d=50), "every group needs at least one neuron"),
])
def test_bad_input_is_refused_with_a_message(changes, message):
    if message is None:  # a valid multi-index setting: r = 1 spike, k = 2 target directions
        assert _setting(**changes).k == 2
        return
    with pytest.raises(ValueError, match=message):
        _setting(**changes)


def test_group_sizes_round_and_the_last_takes_the_remainder():
    s = _setting(loadings=[[1.0], [0.0], [-1.0]], bulk=[1, 1, 1], fractions=[0.3, 0.3, 0.4],
                 d=101)
    assert s.group_sizes == (30, 30, 41) and sum(s.group_sizes) == s.p


def test_weights_and_directions_follow_the_model():
    s = _setting(loadings=[[1.0, 0.5], [-1.0, 0.0]], bulk=[0.5, 2.0], fractions=[0.5, 0.5],
                 target="z1*z2", overlaps=[[0.6, 0.0], [0.0, 0.8]], d=200)
    rng = np.random.default_rng(0)
    V, T, theta = directions(s, rng, rng)
    assert np.allclose(T.T @ T, np.eye(2), atol=1e-12) and np.allclose(V.T @ T, 0, atol=1e-12)
    assert np.allclose(V.T @ V, np.eye(2), atol=1e-12)
    assert np.allclose(np.linalg.norm(theta, axis=0), 1.0, atol=1e-12)
    assert np.allclose(V.T @ theta, np.asarray(s.overlaps), atol=1e-12)
    G = rng.standard_normal((s.p, s.d))
    G /= np.linalg.norm(G, axis=1, keepdims=True)
    W = spiked_weights(G.copy(), V, s)
    n1 = s.group_sizes[0]
    assert np.allclose(W[:n1] @ V, [1.0, 0.5] + math.sqrt(0.5) * G[:n1] @ V, atol=1e-12)
    assert np.allclose(W[n1:] - V @ np.array([-1.0, 0.0]), math.sqrt(2.0) * G[n1:], atol=1e-12)


def test_seeds_are_reproducible_and_independent_of_the_number_of_repetitions():
    s = _setting(loadings=[[1.0, 0.0], [0.0, -1.0]], bulk=[1, 1], fractions=[0.5, 0.5],
                 target="tanh(z1) + z1*z2", overlaps=[[0.8, 0.0], [0.0, 0.8]], d=80)
    a = simulate_spiked(s, [0.5, 2.0], seeds=3, seed=5)
    b = simulate_spiked(s, [0.5, 2.0], seeds=2, seed=5)
    c = simulate_spiked(s, [0.5, 2.0], seeds=2, seed=6)
    assert np.array_equal(a.risks[:2], b.risks)
    assert not np.allclose(b.risks, c.risks)
    assert a.risks.shape == (3, 2) and np.all(np.isfinite(a.se))
    rows = a.frame()
    assert len(rows) == 6 and set(rows["rep"]) == {0, 1, 2}
    assert np.allclose(a.summary()["mean"], a.risks.mean(axis=0))


@pytest.mark.parametrize("u", [1.3, -0.7])
def test_K1_r1_aligned_is_the_srf_simulator_number_for_number(u):
    """With Gamma = 1 both simulators draw the same W and theta from the same streams (the
    spike (u, Gamma) is the sRF spike (|u|, c, sign(u)))."""
    gamma = 1.0
    s = _setting(loadings=[[u]], overlaps=[[gamma]], bulk=[0.8], d=150)
    mine = simulate_spiked(s, [0.5, 2.0], seeds=2, seed=3).risks
    ref = Setting(model="srf", sigma="tanh", target="tanh", alpha=0.5, alpha0=1.0, eta=0.0,
                  lam=0.01, d=150, spike=(abs(u), 0.8, math.copysign(1.0, u) * gamma))
    theirs = np.array([r.values for r in simulate_curve(ref, [0.5, 2.0], seeds=2, seed=3)]).T
    np.testing.assert_allclose(mine, theirs, rtol=1e-9)


def test_K1_r1_partial_overlap_agrees_in_law_with_the_srf_simulator():
    """Gamma = 0.6: the two draw the (v, theta) plane differently; same law, so the means agree
    within the Monte Carlo error (independent streams, 12 seeds each): |z| below the Student
    quantile of the Welch-Satterthwaite degrees of freedom at a two-sided 1e-3, no bias
    allowance."""
    from scipy import stats

    s = _setting(sigma="relu", target="tanh(z1)", loadings=[[1.5]], overlaps=[[0.6]], bulk=[0.7],
                 lam=0.05, d=150)
    mine = simulate_spiked(s, [0.7, 2.5], seeds=12, seed=11)
    ref = Setting(model="srf", sigma="relu", target="tanh", alpha=0.7, alpha0=1.0, eta=0.0,
                  lam=0.05, d=150, spike=(1.5, 0.7, 0.6))
    theirs = simulate_curve(ref, [0.7, 2.5], seeds=12, seed=12)
    for j, r in enumerate(theirs):
        z = (mine.mean[j] - r.mean) / math.hypot(mine.se[j], r.se)
        dof = (mine.se[j] ** 2 + r.se**2) ** 2 / (mine.se[j] ** 4 / 11 + r.se**4 / 11)
        assert abs(z) < stats.t.ppf(1 - 5e-4, dof), (j, mine.mean[j], r.mean, z, dof)


def test_campaign_settings_are_valid_and_cover_the_plan():
    names = [c.name for c in campaign.SETTINGS]
    assert len(names) == len(set(names)) >= 24
    settings = [c.setting for c in campaign.SETTINGS]
    assert {s.K for s in settings} == {1, 2, 3, 4} and {s.r for s in settings} == {1, 2, 3}
    assert {s.sigma for s in settings} == {"relu", "tanh", "erf", "sigmoid"}
    assert {s.beta for s in settings} == {0.5, 1.0, 2.0}
    assert all(s.d == 1000 and s.lam > 0 for s in settings)
    assert all(abs(a - c.setting.beta) > 0.25 for c in campaign.SETTINGS for a in c.alphas)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["K2r2-erf-prod", "K2r1-relu-pm"])
def test_campaign_setting_agrees_with_the_theory(name):
    """Re-run a campaign setting (d = 1000, 16 repetitions) and compare with the p = infinity
    theory: two settings where the spikes matter (Gamma = I; opposite groups of a relu). The
    small-risk settings, where the p = infinity theory floors, are the report's misses.
    |z| below the Student quantile of 15 degrees of freedom at a two-sided 1e-3 per point
    (4.07), no bias allowance."""
    from scipy import stats

    from validation.spiked.report import THEORY_NODES, theory_module

    try:
        spiked = theory_module()
    except ImportError as exc:
        pytest.skip(str(exc))

    c = campaign.BY_NAME[name]
    s = c.setting
    res = simulate_spiked(s, c.alphas, seeds=campaign.SEEDS, seed=campaign.SEED)
    for j, alpha in enumerate(c.alphas):
        theory = spiked.risk_spiked(alpha, sigma=s.sigma, target=s.target, loadings=s.loadings,
                                    bulk=s.bulk, fractions=s.fractions, overlaps=s.overlaps,
                                    lam=s.lam, beta=s.beta, delta=s.delta,
                                    n_kappa=THEORY_NODES[s.r])
        theory = float(getattr(theory, "risk", theory))
        z = (res.mean[j] - theory) / res.se[j]
        t = stats.t.ppf(1 - 5e-4, campaign.SEEDS - 1)
        assert abs(z) < t, (name, alpha, res.mean[j], res.se[j], theory, z)


# ------------------------------------------------------------------------------------------------
# the semi-empirical reference (validation.spiked.reference)


def _bulk(p: int, d: int, r: int, k: int, seed: int):
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((p, d))
    G /= np.linalg.norm(G, axis=1, keepdims=True)
    q, _ = np.linalg.qr(rng.standard_normal((d, r + k)))
    return G, q[:, :r], q[:, r:]


def test_reference_at_K1_r1_is_the_srf_solver_on_the_same_measure():
    """K = r = 1 on a given bulk: the reference equals the project's sRF equations on the
    semi-empirical measure of the same first layer (asymptotics.measures.spectral.from_weights)."""
    from asymptotics.api.risk import build_problem, solve_point
    from asymptotics.measures.spectral import from_weights
    from validation.spiked.reference import Reference

    d = 120
    G, V, T = _bulk(d, d, 1, 1, 3)
    v, t = V[:, 0], T[:, 0]
    W = math.sqrt(1.2) * G + 0.9 * v[None, :]
    theta = 0.8 * v + 0.6 * t
    # the sRF form of W exactly: r = mean(W v), bulk centred along v
    r_emp = float((W @ v).mean())
    B = W - r_emp * v[None, :]
    WP = W - np.outer(W @ v, v)
    c_emp = float(np.trace(WP @ WP.T) / d)
    s = _setting(loadings=[[r_emp]], bulk=[c_emp], overlaps=[[0.8]], d=d)
    ref = Reference(s, B / math.sqrt(c_emp), V, T)
    prob = build_problem(model="srf", sigma="tanh", target="tanh", lam=0.01, beta=1.0,
                         measure=from_weights(W, v, theta))
    for alpha in (0.5, 2.0):
        assert ref.solve(alpha).risk == pytest.approx(solve_point(prob, alpha).risk, rel=1e-7)


def test_reference_opposite_groups_of_an_odd_sigma_are_one_group():
    """sigma odd, groups +u and -u: flipping the bulk rows of the second group gives one group
    with loading u (ridge is invariant to the signs of features), number for number."""
    from validation.spiked.reference import Reference

    d, p = 80, 80
    G, V, T = _bulk(p, d, 2, 2, 4)
    two = _setting(sigma="erf", target="tanh(z1) + z1*z2", loadings=[[1.0, 0.5], [-1.0, -0.5]],
                   bulk=[0.8, 0.8], fractions=[0.5, 0.5], overlaps=[[0.8, 0.0], [0.0, 0.6]], d=d)
    one = two.with_(loadings=[[1.0, 0.5]], bulk=[0.8], fractions=[1.0])
    flipped = G.copy()
    flipped[two.group_sizes[0]:] *= -1
    r2 = Reference(two, G, V, T).solve(1.5).risk
    r1 = Reference(one, flipped, V, T).solve(1.5).risk
    assert r2 == pytest.approx(r1, rel=1e-8)


# ------------------------------------------------------------------------------------------------
# the store and the report (with a stand-in theory)


def test_campaign_store_resumes_and_the_report_lists_a_miss(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from validation.spiked import report

    store, csv = tmp_path / "runs.sqlite", tmp_path / "runs.csv"
    name = "K1r1-tanh-tanh"
    assert campaign.run([name], d=60, seeds=3, store=store, csv=csv, progress=False) == 1
    assert campaign.run([name], d=60, seeds=3, store=store, csv=csv, progress=False) == 0
    runs = campaign.load(csv)
    assert len(runs) == 3 * 2 and set(runs["rep"]) == {0, 1, 2}
    pts = report.summarize(runs)
    assert list(pts["seeds"]) == [3, 3]

    def fake(alpha, p=None, n_kappa=None, **kw):  # the theory: exact at alpha 3, far at 0.5
        mean = float(pts.loc[pts["alpha"] == alpha, "mean"].iloc[0])
        return SimpleNamespace(risk=mean if alpha == 3 else 10 * mean, status="converged")

    monkeypatch.setattr(report, "theory_function", lambda: fake)
    monkeypatch.setattr(campaign, "D", 60)
    text = report.build_report(runs)
    assert "1 points with |z| > 3" in text and "| 2 | 2 | 50.00% |" in text


@pytest.mark.parametrize("name", ["K3r3-erf-add", "K4r1-sigmoid-ladder"])
def test_reference_equals_the_theory_semi_empirical_solver_on_the_same_bulk(name):
    """Two independent implementations of the semi-empirical equations on one bulk (d = 100)."""
    from validation.spiked.reference import KAPPA_NODES, Reference
    from validation.spiked.report import theory_module

    try:
        theory_module()
        from asymptotics.spiked.semi_empirical import risk_spiked_semi_empirical
    except ImportError as exc:
        pytest.skip(str(exc))
    c = campaign.BY_NAME[name]
    s = c.at(100)
    G, V, T = _bulk(s.p, s.d, s.r, s.k, 5)
    ref = Reference(s, G, V, T)
    for alpha in c.alphas:
        theirs = risk_spiked_semi_empirical(
            alpha, G=G, labels=ref.groups, V=V, T=T, sigma=s.sigma, target=s.target,
            loadings=s.loadings, bulk=s.bulk, overlaps=s.overlaps, lam=s.lam,
            n_kappa=KAPPA_NODES[s.r]).risk
        assert ref.solve(alpha).risk == pytest.approx(theirs, rel=1e-6)
