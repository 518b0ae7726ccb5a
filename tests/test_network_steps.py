"""The network theory of K groups after readouts and several steps (docs/THEORY.md §15):
reductions that must hold independently of the new code's own numbers."""

from __future__ import annotations

import numpy as np
import pytest

import asymptotics
from asymptotics.multiindex.steps import steps_mapping
from asymptotics.network.groups import network_groups
from asymptotics.network.solve import risk_network_groups
from asymptotics.spiked.solve import risk_spiked

GROUPS = dict(sigma="relu", target="z1 + z1*z2", loadings=[[1.0, 0.3], [-0.5, 0.8]],
              bulk=[0.8, 1.1], fractions=[0.4, 0.6], overlaps=[[0.7, 0.1], [0.2, 0.5]],
              lam=0.01, beta=1.2)


def _random_channels(K: int, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(K):
        A = rng.standard_normal((n, n)) * 0.4
        out.append(np.eye(n) + A @ A.T)
    return np.array(out)


@pytest.mark.parametrize("p", [None, 700.0])
def test_identity_channels_are_the_k_group_srf_equations(p):
    """Isotropic group bulks (Sig_g = I) are §10.4's channels: the same numbers as
    risk_spiked, order parameters included, on the same kappa rule (the ladders: one policy,
    tests/test_network_ladder.py)."""
    a = risk_spiked(0.8, p=p, n_kappa=36, **GROUPS)
    b = risk_network_groups(0.8, channels=np.repeat(np.eye(4)[None], 2, axis=0), p=p,
                            n_kappa=36, **GROUPS)
    assert a.converged and b.converged
    assert abs(a.risk - b.risk) <= 1e-10 * a.risk
    for name in ("zeta", "psi", "Q1", "Q2", "m"):
        assert np.allclose(a.order[name], b.order[name], atol=1e-10)


def test_identical_groups_reduce_to_one_group():
    """Two groups with the same loadings, bulk and (anisotropic) channels are one group."""
    sig = _random_channels(1, 3, seed=3)[0]
    one = dict(sigma="relu", target="z1 + z1*z2", loadings=[[0.9]], bulk=[0.7],
               overlaps=[[0.6, 0.0]], lam=0.01, beta=0.8)
    a = risk_network_groups(1.5, channels=sig[None], fractions=[1.0], **one)
    two = {**one, "loadings": [[0.9], [0.9]], "bulk": [0.7, 0.7]}
    b = risk_network_groups(1.5, channels=np.array([sig, sig]), fractions=[0.3, 0.7], **two)
    assert a.converged and b.converged
    assert abs(a.risk - b.risk) <= 1e-8 * a.risk
    # and the anisotropy matters: not the isotropic answer
    c = risk_spiked(1.5, fractions=[1.0], **one)
    assert abs(a.risk - c.risk) > 1e-3


def test_constant_readout_one_step_is_the_one_step_network_theory():
    kw = dict(sigma="relu", target="tanh", alpha0=4.0, eta=1.5, lam=0.01, beta=1.5)
    ref = asymptotics.risk(2.0, model="network", **kw)
    via_api = asymptotics.risk(2.0, model="network", readout={1: 1.0}, steps=1, **kw)
    assert abs(via_api.risk - ref.risk) <= 1e-8 * ref.risk
    # a readout of one value 2 with an odd sigma is the constant readout at eta_tilde 2 eta
    kw_odd = {**kw, "sigma": "erf"}
    two = asymptotics.risk(2.0, model="network", readout={2.0: 1.0}, **kw_odd)
    ref2 = asymptotics.risk(2.0, model="network", **{**kw_odd, "eta": 3.0})
    assert abs(two.risk - ref2.risk) <= 1e-8 * ref2.risk


def test_row_scale_channel_at_one_step_is_the_bulk_variance_channel():
    """The rows' outside scale as a channel coordinate of the K-group route (DERIVATIONS.md
    §11: the recursion of §10 and the scale coordinate's mean function 2 c nu) at one step
    with the constant readout is §7's bulk-variance channel (a closed form through kappa
    shifts, a separate derivation): erf/sin, where it moves the risk by -7.8%."""
    from asymptotics.network.route import risk_network

    kw = dict(steps=1, readout="constant", sigma="erf", target="sin", alpha0=20.0, eta=3.0,
              lam=0.01, beta=2.0, outside="isotropic")
    one = asymptotics.risk(5.0, sigma="erf", target="sin", alpha0=20.0, eta=3.0, lam=0.01,
                           beta=2.0, model="network")
    off = risk_network(5.0, row_scale=False, **kw)
    on = risk_network(5.0, **kw)
    assert on.converged and off.converged
    assert off.risk / on.risk - 1.0 > 0.05  # the channel is large here
    assert abs(on.risk / one.risk - 1.0) < 5e-3


def test_odd_sigma_pm1_equals_constant_one_step():
    kw = dict(sigma="tanh", target="tanh", alpha0=2.0, eta=2.0, lam=0.01, beta=1.0)
    a = asymptotics.risk(1.0, readout="pm1", **kw)
    b = asymptotics.risk(1.0, **kw)
    assert abs(a.risk - b.risk) <= 1e-8 * b.risk


def test_odd_sigma_pm1_equals_constant_after_several_steps():
    """Flipping a row and its readout changes nothing for odd sigma, at every step: the pm1
    groups (+s, -s) with their channels give the constant readout's single group."""
    kw = dict(sigma="erf", target="z1 + z1*z2", alpha0=16.0, eta=(2.0, 4.0), lam=0.01,
              beta=1.0)
    a = asymptotics.risk(2.0, steps=2, readout="pm1", **kw)
    b = asymptotics.risk(2.0, steps=2, readout="constant", **kw)
    assert a.converged and b.converged
    assert abs(a.risk - b.risk) <= 1e-6 * b.risk


def test_groups_follow_the_srf_mapping_and_start_isotropic():
    kw = dict(steps=2, alpha0=16.0, eta=(2.0, 8.0), readout="pm1")
    ng = network_groups("relu", "z1 + z1*z2", **kw)
    mp = steps_mapping("relu", "z1 + z1*z2", **kw)
    for s, t in zip(ng.states, mp.states, strict=True):
        assert np.allclose(s.a, t.a, atol=1e-10)
        assert np.allclose(s.spike_gram, t.spike_gram, atol=1e-10)
        assert np.allclose(s.c, t.c, atol=1e-12)
    assert np.allclose(ng.cov[0], np.eye(2))


def test_first_step_covariance_is_the_closed_form():
    """One step from W0 with alpha0 = inf: m1' = E sigma'' = c1 everywhere, so the bulk map on
    the target plane is I + eta eps c1 E[e z z^T] (the tau term of THEORY.md §9): for
    g = z1 + z1 z2 and pm1, E[e z z^T] = [[0, 1], [1, 0]] (E e = 0). c1 by scipy's adaptive
    quadrature (a smooth sigma: the xi rule is then spectrally accurate)."""
    from scipy.integrate import quad
    from scipy.special import erf

    def dd(z):  # sigma'' of erf(z - 1)
        return -4.0 * (z - 1.0) * np.exp(-((z - 1.0) ** 2)) / np.sqrt(np.pi)

    c1 = quad(lambda z: dd(z) * np.exp(-z * z / 2) / np.sqrt(2 * np.pi), -12, 12)[0]
    assert erf(0.0) == 0.0
    eta = 2.0
    ng = network_groups("erf(z-1)", "z1 + z1*z2", steps=1, alpha0=np.inf, eta=eta,
                        readout="pm1")
    for g, eps in enumerate((1.0, -1.0)):
        L = np.eye(2) + eta * eps * c1 * np.array([[0.0, 1.0], [1.0, 0.0]])
        assert np.allclose(ng.cov[1][g], L @ L.T, atol=1e-9)
        assert abs(ng.states[1].c[g] - 1.0) < 1e-9


def test_network_route_is_the_default_model_for_steps():
    kw = dict(sigma="relu", target="z1 + z1*z2", alpha0=16.0, eta=(2.0, 4.0), lam=0.01)
    net = asymptotics.risk(2.0, steps=2, readout="pm1", **kw)
    srf = asymptotics.risk(2.0, steps=2, readout="pm1", model="srf", **kw)
    assert net.converged and srf.converged
    assert abs(net.risk - srf.risk) > 1e-3 * srf.risk
    with pytest.raises(ValueError, match="model must be"):
        asymptotics.risk(2.0, steps=2, model="rf", **kw)


def test_group_covariances_follow_a_simulated_network():
    """The recursion of the groups' bulk covariances (DERIVATIONS.md §9.2) against trained
    networks (protocol of THEORY.md §1/§12; relu, z1 + z1 z2, pm1, alpha0 = 8, eta_tilde =
    (2, 4), d = 300, p = 1200, eight draws): C_zz / c is far from the surrogate's identity
    (off-diagonal ~ +-1.3 and +-3.2), and the mean of each group's sampled C11/c, C12/c and
    C22/c after each step is at the theory within the Student quantile of eight draws
    (two-sided 1e-3 per entry) times its s.e., plus the finite-d bias measured as c/d
    (validation/reports/BIAS_SLOPES.md, network-groups-relu: (|c| + 3 s.e.)/300). C22/c is on
    that footing since the self-term fix of DERIVATIONS.md §9.5. It was one draw at d = 500
    within 15% of the largest entry."""
    from scipy import stats

    from validation.experiments import bias_slopes as BS
    from validation.experiments.bias_slopes.channels import (
        network_group_covariances,
        network_group_theory,
    )

    d = 300
    theory = network_group_theory()
    assert abs(theory["step1:group0:C12/c"]) > 1.0  # the anisotropy the surrogate lacks
    assert abs(theory["step2:group1:C12/c"]) > 3.0
    rng = np.random.default_rng(11)
    runs = [network_group_covariances(d, rng) for _ in range(8)]
    t = stats.t.ppf(1 - 5e-4, len(runs) - 1)
    for q, lim in theory.items():
        x = np.array([r[q] for r in runs])
        band = (t * x.std(ddof=1) / np.sqrt(x.size)
                + BS.slope("network-groups-relu", q).allowance(d))
        assert abs(x.mean() - lim) <= band, (q, x.mean(), lim, band)


def test_group_covariance_c22_limit_is_the_theory():
    """The committed bias measurement of C22/c (network-groups-relu, d = 200, 400, 800): the
    free line a + c/d through the means must meet the theory's limit within 4 of its standard
    errors, as it does for C11/c and C12/c. It did not (intercept z = -3.3 and -5.6 after step 1,
    the sample 4-9% below) while the recursion counted the step's self-term twice on E: the row
    noise on E already holds its part along the row's own fresh coordinate (DERIVATIONS.md §9.5);
    after the fix the step-1 limit is 1.7048 (was 1.8311; by hand (1 + 2/pi + 1/2)/1.25 =
    1.7093 at the quadrature's E sigma'') and every |z| <= 1.5."""
    from validation.experiments import bias_slopes as BS
    from validation.experiments.bias_slopes.channels import network_group_theory

    for q in network_group_theory():
        if q.endswith("C22/c"):
            s = BS.slope("network-groups-relu", q)
            assert abs(s.z_limit) <= 4.0, (q, s.z_limit, s.c, s.se)


@pytest.mark.parametrize("argv,says", [
    (["simulate", "--store", "runs.csv"], "--store must name a .sqlite file"),
    (["simulate", "--only", "N1,N9"], "--only must name settings among"),
    (["simulate", "--d", "500"], "--d must be one of the plan's"),
    (["simulate", "--seeds", "0"], "--seeds must be >= 1, got 0"),
    (["diagnose", "--setting", "N9", "--steps", "1"], "--setting must be one of"),
    (["diagnose", "--setting", "N1", "--steps", "3"], "--steps in 1..2"),
    (["diagnose", "--setting", "N1", "--steps", "x"], "must be comma-separated integers"),
])
def test_simulate_bad_input_is_one_line(argv, says, tmp_path, monkeypatch, capsys):
    """Bad input to the campaign's command: one line naming the parameter, exit 2, no store."""
    from validation.experiments import network_steps as NS

    monkeypatch.chdir(tmp_path)
    assert NS.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and says in err and len(err.splitlines()) == 1
    assert not list(tmp_path.iterdir())


def test_campaign_keys_hold_every_parameter():
    """The plan is PLAN (3 repetitions of every setting at d = 1000, 6 of every setting at 2000); a
    task's key changes with any field of its setting, d, the repetition or the version."""
    from dataclasses import replace

    from validation.experiments import network_steps as NS

    c = NS.campaign()
    assert len(c.settings) == 8 * 3 + 8 * 6
    job = ("N2", 1000, 0)
    base = c.task_hash(job)
    assert base != c.task_hash(("N2", 1000, 1)) != c.task_hash(("N2", 2000, 0))
    assert base != replace(c, version="2").task_hash(job)
    rec = c.record_of(job)["setting"]
    assert rec["setting"]["eta"] == [2.0, 4.0, 8.0] and rec["index"] == 1


def test_aligned_rule_is_an_exact_change_of_basis():
    """The aligned kappa rule (rotation of V, trapezoid on the sharpest spike axis) gives the
    Gauss-Hermite ladder's number on a point the ladder settles (r = 2, to its 1e-3)."""
    from asymptotics.network.aligned import aligned_problem, aligned_rotation
    from asymptotics.network.solve import solve_network

    sig = _random_channels(2, 4, seed=5)
    R = aligned_rotation(np.array(GROUPS["loadings"]), np.array(GROUPS["bulk"]))
    assert np.allclose(R.T @ R, np.eye(2), atol=1e-12)
    u = np.array(GROUPS["loadings"][0])  # the sharper group: sqrt(0.8)/1.04 < sqrt(1.1)/0.94
    assert np.allclose(R[:, 0], u / np.linalg.norm(u), atol=1e-12)
    ladder = risk_network_groups(0.8, channels=sig, **GROUPS)
    prob, ch = aligned_problem(dict(GROUPS), sig, 0.05, 54, None)
    aligned = solve_network(prob, ch, 0.8)
    assert ladder.converged and aligned.converged
    assert abs(aligned.risk - ladder.risk) <= 2e-3 * ladder.risk


def test_unsettled_r3_point_is_settled_by_the_aligned_rule():
    """relu, three-value readout, two steps (r = 3, a loading of norm 7.6 at bulk variance 0.64:
    the tensor Gauss-Hermite ladder oscillates by 0.2-0.6%): the aligned rule settles it, at the
    value a much finer tensor rule (81^3 nodes) gives to 1e-3."""
    from asymptotics.network.route import network_problem, risk_network

    kw = dict(sigma="relu", target="z1 + z1*z2", alpha0=16.0, eta=(2.0, 8.0),
              readout={2.0: 0.25, 1.0: 0.5, -1.0: 0.25})
    prob = network_problem(steps=2, **kw)
    res = risk_network(2.0, steps=2, lam=0.01, beta=0.5, p=500, problem=prob, **kw)
    assert res.converged and "aligned rule" in res.message
    from asymptotics.network.route import outside_kw, with_row_scale

    params, okw = with_row_scale(prob, outside_kw(steps=2, **kw), steps=2, **kw)
    fine = risk_network_groups(2.0, sigma="relu", lam=0.01, beta=0.5, p=500, n_kappa=81,
                               **okw, **params)
    assert fine.converged
    assert abs(res.risk - fine.risk) <= 1e-3 * fine.risk


def test_measured_groups_recover_a_planted_layer():
    """The diagnosis reads a layer's groups: planted group means, bulk variances and bulk
    covariances on E (target coordinates and the means' outside span) come back."""
    from validation.experiments.network_steps import measured_groups

    rng = np.random.default_rng(4)
    d, p, k = 300, 6000, 2
    labels = np.repeat([0, 1], p // 2)
    means = np.zeros((2, d))
    means[0, :3] = [1.0, 0.5, 0.8]
    means[1, :3] = [-0.7, 0.2, 0.0]
    means[1, 3] = 0.6
    C = np.array([[2.0, 0.7], [0.7, 1.5]])  # the planted covariance on (z1, z2), units 1/d
    B = rng.standard_normal((p, d)) / np.sqrt(d)
    B[:, :2] = rng.standard_normal((p, 2)) @ np.linalg.cholesky(C).T / np.sqrt(d)
    st, cov, E, _, _ = measured_groups(means[labels] + B, labels, k)
    assert np.allclose(st.a, means[:, :k], atol=0.01)
    assert np.allclose(st.spike_gram, means @ means.T, atol=0.02)
    assert np.allclose(st.c, (d - 2 + 3.5) / d, rtol=0.02)
    assert E.shape == (d, k + 2)
    for g in range(2):
        assert np.allclose(cov[g][:2, :2], C, atol=0.15)
        assert np.allclose(cov[g][2:, 2:], np.eye(2), atol=0.15)


def test_network_groups_cache_is_exact():
    """A cached mapping, and a longer run started from a cached shorter one, are the mapping
    computed from scratch (the network route's cache, as the surrogate's)."""
    from asymptotics.network.groups import clear_cache

    kw = dict(target="z1 + z1*z2", alpha0=16.0, eta=(2.0, 4.0, 8.0), readout="pm1")
    clear_cache()
    fresh = network_groups("relu", steps=3, **kw)
    clear_cache()
    network_groups("relu", steps=2, **{**kw, "eta": (2.0, 4.0)})
    resumed = network_groups("relu", steps=3, **kw)
    again = network_groups("relu", steps=3, **kw)
    for ng in (resumed, again):
        assert ng.eta == fresh.eta and len(ng.states) == 4
        for a, b in zip(ng.cov, fresh.cov, strict=True):
            assert np.array_equal(a, b)
        for a, b in zip(ng.states, fresh.states, strict=True):
            assert np.array_equal(a.c, b.c) and np.array_equal(a.a, b.a)


def test_per_group_mean_table_kernels_equal_the_compiled_ones():
    """The mean parts on a per-group table (n x K x r, the scale coordinate's route,
    DERIVATIONS.md §12) with the table ``mub1_g kappa`` are the compiled kernels on ``kappa``."""
    from asymptotics.network import channels as C
    from asymptotics.network.route import network_problem
    from asymptotics.spiked import kernels as Kr

    params = network_problem(sigma="relu", target="z1 + z1*z2", steps=2, alpha0=16.0,
                             eta=(2.0, 8.0), readout="pm1")
    base = {k: v for k, v in params.items() if k != "channels"}
    prob = C.spiked_problem(dict(base, sigma="relu", lam=0.01, beta=1.0), 9, None)
    t = prob.tables
    K, r, k = t.mub1.shape[1], t.kappa.shape[1], t.h1.shape[1]
    rng = np.random.default_rng(3)
    state = rng.normal(size=Kr.sizes(K, r, k)[-1]) * 0.3
    table = np.ascontiguousarray(t.mub1[:, :, None] * t.kappa[:, None, :])
    args = (t.weights, t.mu0, t.mub1, t.mus2, t.h, t.h1, t.h2)
    a = C.hats_of(state, t.weights, table, *args[1:], 0.7, 0.01)
    b = Kr.hats_of(state, t.weights, t.kappa, *args[1:], 0.7, 0.01)
    for x, y in zip(a, b, strict=True):
        assert np.allclose(x, y, rtol=1e-11, atol=1e-12)
    iv = 1.0 / (1.0 + np.abs(rng.normal(size=t.weights.size)))
    eps = np.full(K, 1e-3)
    for x, y in zip(C.mean_design(iv, t.weights, table, t.mu0, t.mub1, t.h, eps),
                    Kr.mean_design(iv, t.weights, t.kappa, t.mu0, t.mub1, t.h, eps),
                    strict=True):
        assert np.allclose(x, y, rtol=1e-12, atol=1e-14)
    assert abs(C.risk_of(state, t.weights, table, *args[1:])
               - Kr.risk_of(state, t.weights, t.kappa, *args[1:])) < 1e-10
    scaled = C.mean_table(prob, True)  # the scale coordinate's column appended
    assert scaled.shape == (t.weights.size, K, r + 1)
    assert np.array_equal(scaled[:, :, :r], table)
