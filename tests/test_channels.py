"""General channels (docs/DERIVATIONS.md §5): the fixed point with F_vv, F_vt, F_tt.

Regression: with the sRF closures (F_vv = beta c, F_vt = 0, F_tt = beta rho on the MP measure)
the general equations must give the numbers of the sRF-only code they replace, to 1e-10. The
reference values below were computed by that code (validated by simulation of the sRF model,
validation/REPORT.md) before the cross channel was added.
"""

from __future__ import annotations

import numpy as np
import pytest

import asymptotics as A
from asymptotics.measures.spectral import SpectralMeasure, empirical_measure
from validation.experiments.bias_slopes.channels import sphere_frame

REFERENCE = [
    (dict(alpha=3.0, sigma="tanh", target="tanh", alpha0=0.5, eta=1.0, lam=0.01, beta=1.0),
     0.1409459241896502,
     [0.6103504535734136, 1.0641016154755163, 1.1897091199820875, 3.5628386219854105,
      -0.00020981736029549879, 0.6492802774412391, 0.9863206255621878]),
    (dict(alpha=5.0, sigma="relu", target="relu", alpha0=20.0, eta=3.0, lam=0.01, beta=1.0),
     0.05710975926454078,
     [0.07647490759573751, 0.18784855854742044, 0.5381574489069514, 1.3451965673858322,
      0.22401914463728487, 0.17243420029778592, 0.7976398252966571]),
    (dict(alpha=2.0, sigma="erf", target="sin", alpha0=0.5, eta=3.0, lam=0.01, beta=2.0),
     0.39149893453432744,
     [2.439515933062944, 1.7412055831095488, 20.065452352765938, 27.322345663636007,
      -0.1644183269796471, 1.0516150886395788, 0.570566300588968]),
    (dict(alpha=1.5, sigma="tanh", target="tanh", alpha0=2.0, eta=1.0, lam=0.1, beta=0.5,
          delta=0.1),
     0.17567459198876476,
     [0.309650693841338, 0.41247883711494915, 1.0465126382659835, 1.600706694558466,
      0.004404091228865074, 0.2483174633401655, 1.7375180374243222]),
    (dict(alpha=2.0, sigma="relu", target="tanh", alpha0=1.0, eta=0.0, lam=0.01, beta=1.5),
     0.35103985367600943,
     [0.8778899824632385, 1.6884510129819021, 3.9022911391951927, 11.206165465292527,
      0.4985145590562272, 0.6122873626425989, -1.2483812455518568e-16]),
    (dict(alpha=0.7, sigma="erf", target="relu", alpha0=4.0, eta=2.0, lam=0.001, beta=3.0),
     0.6116054706441596,
     [1.0658793780184446, 0.7056824351316973, 412.5409064743876, 768.2607374622326,
      -0.05578790918332127, 0.27149394046697656, 1.0791783689116061]),
]
EMPIRICAL_REFERENCE = (
    0.14496500154589492,
    [0.6014136762735768, 1.088160427043583, 1.1884017623701058, 3.5709636215466762,
     -0.00024187891736797678, 0.6387881489102882, 0.986360349335392])


@pytest.mark.parametrize("kw,risk,state", REFERENCE)
def test_srf_closures_reproduce_the_srf_code(kw, risk, state):
    r = A.risk(model="srf", **kw)
    assert r.converged
    assert r.risk == pytest.approx(risk, rel=1e-10, abs=1e-12)
    np.testing.assert_allclose(r.state, state, rtol=1e-10, atol=1e-12)


def _atoms(seed: int = 5, d: int = 300):
    return sphere_frame(np.random.default_rng(seed), d, d)


KW = dict(sigma="tanh", target="tanh", alpha0=0.5, eta=1.0, lam=0.01, beta=1.0, model="srf")


def test_empirical_atoms_without_cross_channel_reproduce_the_srf_code():
    W0, v, t = _atoms()
    c = A.build_problem(**KW).spike.c
    m = empirical_measure(W0, v, t, c=c)
    assert np.max(np.abs(m.G)) > 0  # the sampled measure has a cross channel ...
    m0 = SpectralMeasure("atoms", m.beta, m.c, m.rho, m.F, m.H, np.zeros_like(m.G))
    r = A.risk(3.0, **KW, measure=m0)  # ... without it: the old numbers
    assert r.risk == pytest.approx(EMPIRICAL_REFERENCE[0], rel=1e-10)
    np.testing.assert_allclose(r.state, EMPIRICAL_REFERENCE[1], rtol=1e-10, atol=1e-12)


def test_cross_channel_solution_satisfies_the_literal_equations():
    """With F_vt != 0 the completed state is a fixed point of the literal map (residual), and
    the cross channel enters: doubling it changes zeta and psi."""
    W0, v, t = _atoms()
    c = A.build_problem(**KW).spike.c
    m = empirical_measure(W0, v, t, c=c)
    big = SpectralMeasure("atoms", m.beta, m.c, m.rho, m.F, m.H,
                          0.5 * np.sqrt(m.F * m.H) * np.sign(m.G + 1e-300))
    r0 = A.risk(3.0, **KW, measure=SpectralMeasure("atoms", m.beta, m.c, m.rho, m.F, m.H,
                                                  np.zeros_like(m.G)))
    r1 = A.risk(3.0, **KW, measure=big)
    assert r1.converged and r1.residual <= 1e-10
    assert abs(r1.zeta - r0.zeta) > 1e-4 or abs(r1.psi - r0.psi) > 1e-4


def test_cross_channel_averages_match_a_direct_sum():
    """The kernel's cross-channel averages against numpy on the atoms: the quadratic forms
    <N/S^2> and <rho N/S^2> of u = zetahat Wv + psihat Wt (docs/DERIVATIONS.md §5)."""
    W0, v, t = _atoms(seed=7, d=200)
    m = empirical_measure(W0, v, t, c=1.3)
    s0, s1 = 0.3, 0.8
    mom = m.moments(s0, s1)
    zh, ph = 0.7, -0.4
    S = s0 + s1 * m.rho
    fv = np.sqrt(m.F) * np.sign(m.G + 0.0)  # any signs with fv * ft = G
    ft = m.G / np.where(fv == 0, 1.0, fv)
    u2 = (zh * fv + ph * ft) ** 2
    direct = np.mean(u2 / S**2)
    via = zh * zh * mom[7] + 2 * zh * ph * mom[12] + ph * ph * mom[9]
    assert via == pytest.approx(direct, rel=1e-10)
    direct1 = np.mean(m.rho * u2 / S**2)
    via1 = zh * zh * mom[8] + 2 * zh * ph * mom[13] + ph * ph * mom[10]
    assert via1 == pytest.approx(direct1, rel=1e-10)


def _srf_weights(seed: int, d: int, p: int, r: float, c: float, gamma: float):
    from validation.experiments.bias_slopes.channels import srf_weights

    return srf_weights(np.random.default_rng(seed), d, p, r, c, gamma)


def test_from_weights_recovers_the_srf_spike_and_risk():
    """On sRF weights sqrt(c) W0 + r 1 v^T (d = p = 400, eight draws) the semi-empirical measure
    recovers (gamma, r, c), the mean of F and a risk at the deterministic MP theory's, with v
    given and with v estimated: each mean within the Student quantile of 7 degrees of freedom at
    a two-sided 1e-3 per comparison times its s.e., plus the finite-d bias measured as c/d
    (validation/reports/BIAS_SLOPES.md: (|c| + 3 s.e.)/400; it was one draw at d = 800 within
    fixed 1-15%)."""
    from scipy import stats

    from validation.experiments import bias_slopes as BS
    from validation.experiments.bias_slopes.channels import channel_draw, channel_theory

    st = BS.BY_NAME["srf-weights-relu"]
    kw = dict(sigma="relu", target="relu", alpha0=20.0, eta=3.0, lam=0.01, beta=1.0)
    sp = A.build_problem(**kw, model="srf").spike
    W, v, theta = _srf_weights(3, 400, 400, sp.r, sp.c, sp.gamma)
    for vv in (v, None):
        m = A.from_weights(W, vv, theta)
        res = A.risk(5.0, **kw, measure=m)
        assert m.kind == "weights" and res.converged
        assert res.r == m.r and res.gamma == m.gamma
    d = 400
    rng = np.random.default_rng(3)
    runs = [channel_draw(st, d, rng) for _ in range(8)]
    lim = channel_theory(st)
    assert lim["est.risk"] == A.risk(5.0, model="srf", **kw).risk and lim["v.c"] == sp.c
    t = stats.t.ppf(1 - 5e-4, len(runs) - 1)
    for q, y in lim.items():
        x = np.array([r[q] for r in runs])
        band = (t * x.std(ddof=1) / np.sqrt(x.size) + BS.slope(st.name, q).allowance(d)
                + 1e-12)  # rounding: gamma = v.theta* exactly when v is given
        assert abs(x.mean() - y) <= band, (q, x.mean(), y, band)


def test_from_weights_rejects_bad_input():
    W, v, theta = _srf_weights(1, 50, 40, 0.5, 1.0, 0.8)
    with pytest.raises(ValueError, match="p x d matrix"):
        A.from_weights(W[0], v, theta)
    bad = W.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        A.from_weights(bad, v, theta)
    with pytest.raises(ValueError, match="unit vector"):
        A.from_weights(W, 2 * v, theta)
    with pytest.raises(ValueError, match="theta must be a unit vector"):
        A.from_weights(W, v, 0.5 * theta)
    with pytest.raises(ValueError, match="length d = 50"):
        A.from_weights(W, v, theta[:-1])


def test_special_columns_reduce_to_the_srf_closures():
    """MP leave-one-out identity: a bulk column's channel x/(1 + s1 x), x = beta c <1/S>, equals
    beta <rho/S> (and its s0, s1 derivatives), so channel_measure(c, 0, c) is the sRF measure."""
    from asymptotics.measures.spectral import channel_measure, marchenko_pastur

    for beta, c, s0, s1 in [(1.0, 1.03, 0.3, 0.8), (2.0, 2.1, 0.01, 1.5), (0.5, 1.0, 1e-3, 3.0)]:
        a = marchenko_pastur(beta, c).moments(s0, s1)
        b = channel_measure(beta, c, c, 0.0, c).moments(s0, s1)
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-14)


@pytest.mark.slow  # ~20 s of sampled spectra: the slow suite
def test_population_bulk_is_generalised_marchenko_pastur():
    """Kind 'population' (docs/DERIVATIONS.md §7): with equal population variances the bulk
    averages are MP(beta) scaled by c to 1e-10 (closed form); with two variances they match the
    spectrum of a sampled p x d Gram matrix B B^T, B = G diag(lam/d)^(1/2) (d = 600, eight
    draws): the mean relative deviation of each moment within the Student quantile of 7 degrees
    of freedom at a two-sided 1e-3 times its s.e., plus the finite-d bias measured as c/d
    (validation/reports/BIAS_SLOPES.md: (|c| + 3 s.e.)/600; it was one draw at d = 1500 within
    a fixed 1.5%)."""
    from scipy import stats

    from asymptotics.measures.spectral import EMPTY, marchenko_pastur, measure_moments
    from validation.experiments import bias_slopes as BS
    from validation.experiments.bias_slopes.channels import gmp_deviations

    z = np.zeros(0)
    for beta, c, s0, s1 in [(0.5, 1.7, 0.1, 1.0), (1.0, 0.8, 1.0, 0.3), (2.0, 1.2, 0.05, 2.0),
                            (1.5, 1.0, 2.0, 0.0)]:
        a = marchenko_pastur(beta, c).moments(s0, s1)[:5]
        b = measure_moments(3, beta, c, np.full(40, c), np.zeros(1), z, z, s0, s1)[:5]
        np.testing.assert_allclose(b, a, rtol=1e-10)
    assert np.isnan(measure_moments(3, 2.0, 1.0, np.ones(5), np.zeros(1), z, z, 0.0, 1.0)[0])
    rng = np.random.default_rng(1)
    d = 600
    runs = [gmp_deviations(d, rng) for _ in range(8)]
    t = stats.t.ppf(1 - 5e-4, len(runs) - 1)
    for q in runs[0]:
        x = np.array([r[q] for r in runs])
        band = t * x.std(ddof=1) / np.sqrt(x.size) + BS.slope("gmp-bulk-two-variances",
                                                               q).allowance(d)
        assert abs(x.mean()) <= band, (q, x.mean(), band)
    assert EMPTY.shape == (1,)


def test_population_measure_is_deterministic():
    from asymptotics.measures.population import population_measure

    kw = dict(alpha0=2.0, eta=1.0, beta=2.0)
    a, b = population_measure("relu", "tanh", **kw), population_measure("relu", "tanh", **kw)
    assert a.kind == "quadrature" and np.array_equal(a.F, b.F) and np.array_equal(a.rho, b.rho)
    c, d = (population_measure("relu", "tanh", method="device", **kw) for _ in range(2))
    assert c.kind == "population" and np.array_equal(c.F, d.F) and np.array_equal(c.rho, d.rho)
    assert A.risk(5.0, sigma="relu", target="tanh", lam=0.01, model="network", **kw).risk == \
        A.risk(5.0, sigma="relu", target="tanh", lam=0.01, measure=b, **kw).risk


def test_model_argument():
    kw = dict(sigma="relu", target="relu", alpha0=20.0, eta=3.0, lam=0.01, beta=1.0)
    srf, net = A.risk(5.0, **kw, model="srf"), A.risk(5.0, **kw)
    assert srf.model == "srf" and srf.measure == "mp"  # the default is the network
    assert net.model == "network" and net.measure == "quadrature" and net.converged
    assert net.risk < srf.risk  # the network learns more than its sRF surrogate here
    df = A.risk_curve([1.0, 5.0], **kw, model="network", progress=False)
    assert (df["model"] == "network").all() and df["risk"].iloc[1] == pytest.approx(net.risk)
    with pytest.raises(ValueError, match="model 'rf' is random features"):
        A.risk(5.0, **kw, model="rf")
    with pytest.raises(ValueError, match="model must be one of"):
        A.risk(5.0, **kw, model="nn")
    rf = A.risk(5.0, **dict(kw, eta=0.0), model="rf")
    assert rf.model == "rf" and rf.risk == A.risk(5.0, **dict(kw, eta=0.0)).risk


@pytest.mark.slow  # ~1 min of sampled first layers: the slow suite
def test_step_covariances_match_the_sampled_first_layer():
    """The deterministic (svv, svt, stt) of one giant step (docs/DERIVATIONS.md §7) against the
    network's sampled W1 (validation simulator, relu/relu, alpha0 = 20, eta = 3, d = p = 600,
    8 seeds): d times the row covariances of the centred bulk along (v, t), each mean within the
    Student quantile of 7 degrees of freedom at a two-sided 1e-3 times its s.e., plus the
    finite-d bias measured as c/d (validation/reports/BIAS_SLOPES.md: (|c| + 3 s.e.)/600; it was
    3 seeds within a fixed 8%)."""
    from scipy import stats

    from asymptotics.coefficients.functions import get_function
    from asymptotics.step.plane import step_covariances
    from validation.experiments import bias_slopes as BS
    from validation.protocol.simulator import Setting, first_layer

    s = get_function("relu")
    st = Setting(model="network", sigma="relu", target="relu", alpha=1.0, alpha0=20.0,
                 eta=3.0, lam=0.01, beta=1.0, d=600)
    got = []
    for ch in np.random.SeedSequence(11).spawn(8):
        W1, theta, _ = first_layer(st, ch, s, s)
        m = A.from_weights(W1, None, theta)
        got.append((m.F.mean(), m.G.mean(), m.H.mean()))
    got = np.array(got)
    pv, pt_, ptt, _ = step_covariances("relu", "relu", alpha0=20.0, eta=3.0)
    c = A.build_problem(model="srf", sigma="relu", target="relu", alpha0=20.0, eta=3.0,
                        lam=0.01).spike.c
    assert abs(got[:, 0].mean() - c) > 1.0 and pt_ < -0.1  # sRF would say c and 0
    t = stats.t.ppf(1 - 5e-4, len(got) - 1)
    for j, (q, y) in enumerate((("svv", pv), ("svt", pt_), ("stt", ptt))):
        x = got[:, j]
        band = t * x.std(ddof=1) / np.sqrt(x.size) + BS.slope("network-step-relu",
                                                               q).allowance(600)
        assert abs(x.mean() - y) <= band, (q, x.mean(), y, band)


@pytest.mark.slow  # ~1-2 min: eight networks at d = 1000
def test_semi_empirical_and_network_theory_predict_the_network():
    """relu/relu, alpha0 = 20, eta = 3, beta = 1, alpha = 5, lam = 0.01, d = 1000, eight
    repetitions: the sRF surrogate is 20% above the trained network (0.0571 against ~0.047);
    the network's mean test error is at the deterministic network theory, and the semi-empirical
    theory of each sampled W1 at the network's error of the same W1 (the paired difference at
    0), each within the Student quantile of eight draws (two-sided 1e-3 per comparison) times
    its s.e., plus the finite-d bias measured as c/d (validation/reports/BIAS_SLOPES.md,
    network-risk-relu: (|c| + 3 s.e.)/1000). It was three repetitions within 4%."""
    from scipy import stats

    from validation.experiments import bias_slopes as BS
    from validation.experiments.bias_slopes.channels import KW, network_risk_draw

    d = 1000
    rng = np.random.default_rng(123)
    runs = [network_risk_draw(d, rng) for _ in range(8)]
    t = stats.t.ppf(1 - 5e-4, len(runs) - 1)
    theory = A.risk(5.0, **KW, model="network").risk
    for q, lim in (("net_risk", theory), ("semi_minus_net", 0.0)):
        x = np.array([r[q] for r in runs])
        band = t * x.std(ddof=1) / np.sqrt(x.size) + BS.slope("network-risk-relu",
                                                                 q).allowance(d)
        assert abs(x.mean() - lim) <= band, (q, x.mean(), lim, band)
    assert A.risk(5.0, model="srf", **KW).risk > 1.1 * np.mean([r["net_risk"] for r in runs])


def test_population_measure_closes_the_network_families():
    """Against the stored d = 2000 network repetitions (validation/data/matrix_runs.csv), the
    network theory at the simulated width (population measure, docs/DERIVATIONS.md §7) is within
    the Student quantile of the repetitions (8: 7 degrees of freedom, two-sided 1e-3 per point,
    5.41 s.e.; no bias allowance) at points of the three families the rank-one measure misses:
    relu/tanh (bulk directions correlated with Bv), relu/relu at alpha0 = 2 and erf/sin at
    alpha0 = 0.5 (non-MP bulk); the rank-one measure is outside 3 s.e. at most of them."""
    from pathlib import Path

    import pandas as pd

    from asymptotics.measures.population import network_measure

    store = pd.read_csv(Path(__file__).resolve().parents[1] / "validation" / "data"
                        / "matrix_runs.csv")
    cases = [("relu", "tanh", 2.0, 2.0, 1.0), ("relu", "relu", 1.0, 2.0, 3.0),
             ("erf", "sin", 2.0, 0.5, 3.0)]
    from scipy import stats

    z_pop, z_rank, t = [], [], []
    for sg, tg, beta, a0, eta in cases:
        kw = dict(sigma=sg, target=tg, beta=beta, alpha0=a0, eta=eta)
        sub = store[(store["model"] == "network") & (store["d"] == 2000) & (store["lam"] == 0.01)
                    & (store["alpha"] == 5.0)]
        for k, val in kw.items():
            sub = sub[sub[k] == val]
        assert len(sub) >= 8, f"store lacks {kw}"
        t.append(stats.t.ppf(1 - 5e-4, len(sub) - 1))
        mean, se = sub["risk"].mean(), sub["risk"].std(ddof=1) / np.sqrt(len(sub))
        pop = A.risk(5.0, **kw, lam=0.01, model="network", p=beta * 2000).risk
        rank = A.risk(5.0, **kw, lam=0.01, p=beta * 2000,
                      measure=network_measure(sg, tg, alpha0=a0, eta=eta, beta=beta)).risk
        z_pop.append((mean - pop) / se)
        z_rank.append((mean - rank) / se)
    assert np.all(np.abs(z_pop) <= np.array(t)), f"z = {np.round(z_pop, 2)}"
    assert np.sum(np.abs(z_rank) > 3) >= 2, f"rank-one z = {np.round(z_rank, 2)}"


def test_population_bulk_root_and_the_v_subsystem_averages():
    """The generalised MP root m = <1/S> solves 1 = s0 m + <g(s1 m lam)> to rounding from the
    closed-form start (wide and narrow populations, s0 -> 0 included); at s0 = 0 (beta < 1) it
    is MP's closed form 1/((1 - beta) s1 c); ``bulk_moments``, what the V-subsystem iterates on,
    is ``measure_moments``' first two averages bit for bit."""
    from asymptotics.measures.spectral import bulk_moments, marchenko_pastur, measure_moments

    z = np.zeros(0)
    rng = np.random.default_rng(3)
    for lam in (np.full(16, 1.3), np.linspace(1.0, 1.07, 16), rng.uniform(0.05, 9.0, 40)):
        w = np.full(lam.shape[0], 1.0 / lam.shape[0])
        for beta in (0.5, 1.0, 2.0):
            for s0, s1 in [(1e-6, 3.0), (0.01, 0.5), (0.3, 0.8), (2.0, 1e-4), (0.05, 40.0)]:
                mom = measure_moments(3, beta, 1.0, lam, z, z, z, s0, s1)
                m = mom[0]
                y = s1 * m * lam
                terms = np.concatenate([[s0 * m], w * y / (1 + beta * y)])
                assert abs(terms.sum() - 1.0) <= 1e-14 * np.abs(terms).sum() + 1e-15
                got = bulk_moments(3, beta, 1.0, lam, z, z, z, s0, s1)
                assert got[0] == mom[0] and got[1] == mom[1]
                if lam.shape[0] == 16:  # the quadrature kind reads its bulk from block 0
                    F = np.concatenate([w, np.zeros(64)])
                    q = measure_moments(4, beta, 1.0, np.concatenate([lam, np.ones(64)]), F,
                                        np.zeros(1), z, s0, s1)
                    b = bulk_moments(4, beta, 1.0, np.concatenate([lam, np.ones(64)]), F,
                                     np.zeros(1), z, s0, s1)
                    assert b[0] == q[0] and b[1] == q[1]
    a = marchenko_pastur(0.5, 1.0).moments(0.0, 2.0)[0]
    b = measure_moments(3, 0.5, 1.0, np.ones(8), z, z, z, 0.0, 2.0)[0]
    assert abs(b - a) <= 1e-14 * a and abs(a - 1.0 / (0.5 * 2.0)) <= 1e-14
