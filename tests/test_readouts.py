"""One giant step with a finite-support initial readout (docs/THEORY.md §11): the mapping to the
K-group sRF model, its reductions and its errors; the Monte Carlo of the network with that readout
(validation/spiked/readouts.py) and one small check of the theory against it (slow)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import asymptotics as A
from asymptotics.spiked.readouts import parse_readout, readout_mapping, risk_readout

KW = dict(alpha0=2.0, eta=1.0, lam=0.01, beta=1.0)


@pytest.mark.parametrize("sigma,target", [("tanh", "tanh"), ("relu", "tanh"), ("relu", "relu"),
                                          ("erf", "relu"), ("softplus", "he2")])
@pytest.mark.parametrize("alpha0,eta,delta", [(2.0, 1.0, 0.0), (0.7, 2.5, 0.3)])
def test_constant_mapping_is_srf_mapping(sigma, target, alpha0, eta, delta):
    """The K = 1, eps = 1 case of the mapping is asymptotics.srf_mapping number for number."""
    ref = A.srf_mapping(sigma, target, alpha0=alpha0, eta=eta, delta=delta)
    mp = readout_mapping(sigma, target, alpha0=alpha0, eta=eta, delta=delta)
    assert mp.loadings == [[ref.r]] and mp.bulk == [ref.c] and mp.fractions == [1.0]
    assert mp.gamma == ref.gamma and mp.rho == ref.rho and mp.scales == [ref.scale]
    assert mp.residual_mean == ref.residual_mean
    assert mp.residual_second_moment == ref.residual_second_moment
    assert mp.u_norm == ref.u_norm


def test_pm1_mapping_by_hand():
    """relu (mu0 = E z sigma' = 1/sqrt(2 pi), E sigma' = 1/2), tanh target: E[eps] = 0 removes
    mu0 from the residual (E e = 0, E e^2 = E tanh^2), so s_g = 1, and the loadings are +-r."""
    ge = A.ge_coefficients("relu", "tanh")
    mp = readout_mapping("relu", "tanh", alpha0=2.0, eta=1.5, readout="pm1")
    ee2 = ge.mu2_star  # the initial output p^-1 sum_j eps_j sigma(w_j.x) -> mu0 E[eps] = 0
    u = math.sqrt(ge.mu1_star**2 + ee2 / 2.0)
    r = 1.5 * 0.5 * u
    assert mp.residual_mean == pytest.approx(0.0, abs=1e-15)
    assert mp.residual_second_moment == pytest.approx(ee2, rel=1e-14)
    assert np.ravel(mp.loadings) == pytest.approx([r, -r], rel=1e-12)
    c = 1.0 + 1.5**2 * ge.s2 * ee2 / 2.0
    assert mp.bulk == pytest.approx([c, c], rel=1e-12)
    assert mp.fractions == [0.5, 0.5] and mp.gamma == pytest.approx(ge.mu1_star / u, rel=1e-14)
    # a general support: E[eps] and E[eps^2] enter the residual, eps_g the scale and the bulk
    mp3 = readout_mapping("relu", "tanh", alpha0=2.0, eta=1.5, readout={2.0: 0.25, -1.0: 0.75})
    m1 = -0.25
    ee = ge.mu0_star - ge.mu0 * m1
    ee2 = ge.mu2_star - 2 * ge.mu0 * m1 * ge.mu0_star + ge.mu0**2 * m1**2
    s = [1 + e * 1.5 * ge.c1 * ee for e in (2.0, -1.0)]
    assert mp3.scales == pytest.approx(s, rel=1e-12)
    assert mp3.bulk == pytest.approx([s[0]**2 + 4 * 1.5**2 * ge.s2 * ee2 / 2,
                                      s[1]**2 + 1.5**2 * ge.s2 * ee2 / 2], rel=1e-12)


def test_infinite_first_batch():
    """alpha0 = inf: |u| = |mu1*|, gamma = 1, c_g = s_g^2 (no row noise), and the limit of large
    alpha0."""
    ge = A.ge_coefficients("relu", "relu")
    mp = readout_mapping("relu", "relu", alpha0=math.inf, eta=1.0, readout="pm1")
    assert mp.u_norm == pytest.approx(abs(ge.mu1_star), rel=1e-14) and mp.gamma == 1.0
    assert mp.bulk == pytest.approx([s**2 for s in mp.scales], rel=1e-14)
    big = readout_mapping("relu", "relu", alpha0=1e9, eta=1.0, readout="pm1")
    assert big.bulk == pytest.approx(mp.bulk, rel=1e-8)
    assert np.ravel(big.loadings) == pytest.approx(np.ravel(mp.loadings), rel=1e-8)


@pytest.mark.parametrize("sigma,target,alpha", [("tanh", "tanh", 0.5), ("relu", "tanh", 2.0),
                                                ("erf", "relu", 1.5)])
def test_constant_readout_is_the_srf_theory(sigma, target, alpha):
    """readout = "constant" through the K-group solver equals asymptotics.risk(model="srf")."""
    ref = A.risk(alpha, sigma=sigma, target=target, model="srf", **KW)
    res = risk_readout(alpha, readout="constant", sigma=sigma, target=target, **KW)
    assert ref.converged and res.converged
    assert abs(res.risk - ref.risk) <= 1e-8 * max(1.0, ref.risk)


@pytest.mark.parametrize("sigma,target,alpha,p", [("tanh", "tanh", 0.5, None),
                                                  ("erf", "relu", 2.0, None),
                                                  ("tanh", "relu", 3.0, 200)])
def test_odd_sigma_pm1_is_constant(sigma, target, alpha, p):
    """Odd sigma: flipping a neuron's readout flips its step, sigma(-w.x) = -sigma(w.x) and the
    ridge readout absorbs the sign, so pm1 gives the constant readout's risk exactly (also at
    finite width). The groups are solved as two (loadings +-r): a real check of the solver."""
    kw = dict(sigma=sigma, target=target, p=p, **KW)
    pm = risk_readout(alpha, readout="pm1", **kw)
    const = risk_readout(alpha, readout="constant", **kw)
    assert pm.converged and const.converged and len(pm.loadings) == 2
    assert pm.risk == pytest.approx(const.risk, rel=1e-10, abs=0)
    # an asymmetric support keeps the symmetry too: {2: 1/4, -2: 3/4} is one group at eps = 2
    asym = risk_readout(alpha, readout={2.0: 0.25, -2.0: 0.75}, **kw)
    one = risk_readout(alpha, readout={2.0: 1.0}, **kw)
    assert asym.risk == pytest.approx(one.risk, rel=1e-10, abs=0)


def test_pm1_differs_from_constant_for_relu():
    """The check above could fail: with relu (mu0 != 0) the two readouts differ by a lot."""
    kw = dict(sigma="relu", target="tanh", **KW)
    assert risk_readout(2.0, readout="pm1", **kw).risk < 0.7 * risk_readout(
        2.0, readout="constant", **kw).risk


def test_curve_and_top_level_names():
    df = A.risk_readout_curve([0.5, 2.0], readout="pm1", sigma="relu", target="tanh", **KW)
    assert list(df.alpha) == [0.5, 2.0] and df.converged.all() and set(df.readout) == {"pm1"}
    one = A.risk_readout(2.0, readout="pm1", sigma="relu", target="tanh", **KW)
    assert float(df.risk.iloc[1]) == pytest.approx(one.risk, rel=1e-8)


@pytest.mark.parametrize("spec,err,message", [
    ({1.0: 0.5, -1.0: 0.4}, ValueError, "readout weights must sum to 1, got 0.9"),
    ({1.0: 1.2, -1.0: -0.2}, ValueError, "readout weights must be > 0, got -0.2"),
    ({0.0: 0.5, 1.0: 0.5}, ValueError, "readout values must be finite and nonzero"),
    ({math.inf: 1.0}, ValueError, "readout values must be finite and nonzero .*, got inf"),
    ({1.0: math.nan}, ValueError, "readout weights must be > 0"),
    ({}, ValueError, "at least one value"),
    ("hypercube", ValueError, "readout must be 'constant', 'pm1' or a mapping"),
    (3, TypeError, "readout must be 'constant', 'pm1' or a mapping"),
    ({"a": 1.0}, TypeError, "readout value must be a real number"),
])
def test_bad_readouts(spec, err, message):
    with pytest.raises(err, match=message):
        parse_readout(spec)


def test_readout_names_and_model():
    assert parse_readout("pm1") == parse_readout({-1: 0.5, 1: 0.5})
    assert parse_readout({-1: 0.5, 1: 0.5}).name == "pm1"
    assert parse_readout({2: 0.25, -1: 0.75}).name == "{2: 0.25, -1: 0.75}"
    assert parse_readout().is_constant and parse_readout("pm1").mean == 0.0
    with pytest.raises(ValueError, match="answered by asymptotics.risk"):
        risk_readout(1.0, readout="pm1", model="network")
    with pytest.raises(ValueError, match="alpha0 must be > 0"):
        readout_mapping("tanh", "tanh", alpha0=0.0, eta=1.0, readout="pm1")


def test_api_risk_readout_keyword():
    """asymptotics.risk(readout=...): "constant" is today's path (the same object type and
    numbers), other readouts route to the K-group solver with model="srf" and to the network
    theory of the groups (THEORY.md §14) with the default model="network"."""
    base = A.risk(2.0, sigma="relu", target="tanh", model="srf", **KW)
    same = A.risk(2.0, sigma="relu", target="tanh", model="srf", readout="constant", **KW)
    assert same == base
    pm = A.risk(2.0, sigma="relu", target="tanh", model="srf", readout="pm1", **KW)
    ref = risk_readout(2.0, readout="pm1", sigma="relu", target="tanh", **KW)
    assert pm.risk == ref.risk and pm.converged
    # the default model is the network theory: tanh is odd, so pm1 is the constant readout
    assert A.risk(2.0, readout="pm1").risk == A.risk(2.0).risk
    with pytest.raises(ValueError, match="does not support gamma"):
        A.risk(2.0, model="srf", readout="pm1", gamma=0.5)
    with pytest.raises(ValueError, match="readout weights must sum to 1"):
        A.risk(2.0, model="srf", readout={1.0: 0.5})


# ------------------------------------------------------------------------------------------------
# the Monte Carlo


def test_network_constant_readout_is_the_simulator():
    """readout = "constant": a repetition of the readout simulator is the network repetition of
    validation.protocol.simulator number for number (same streams); pm1 draws binomial group
    sizes."""
    from validation.protocol.simulator import Setting, simulate_grid_once
    from validation.spiked.readouts import ReadoutCase, draw_readout, network_once

    case = ReadoutCase("t", "relu", "tanh", 1.0, alphas=(0.5, 2.0))
    a, frac = network_once(case, "constant", 60, np.random.SeedSequence(3))
    s = Setting(model="network", sigma="relu", target="tanh", alpha=0.5, alpha0=2.0, eta=1.0,
                lam=0.01, d=60)
    b = simulate_grid_once(s, case.alphas, [0.01], np.random.SeedSequence(3))[:, 0]
    assert np.array_equal(a, b) and frac == 1.0
    eps = draw_readout("pm1", 10_000, np.random.default_rng(0))
    assert set(np.unique(eps)) == {-1.0, 1.0} and abs(eps.mean()) < 0.05


def test_odd_network_pm1_step_is_the_constant_step_on_flipped_rows():
    """Odd sigma (THEORY.md §11): the step of the pm1 network on W0 is the step of the constant
    network on diag(eps) W0, row for row up to the sign eps_j (same batch), so the features differ
    by signs the ridge absorbs. With relu the same comparison fails (mu0 != 0)."""
    from asymptotics.coefficients.functions import get_function
    from validation.protocol import montecarlo as mc

    d, p, n0 = 40, 30, 80
    rng = np.random.default_rng(1)
    W0 = mc.sphere_rows(rng, p, d)
    theta = mc.unit_vector(rng, d)
    eps = np.where(rng.random(p) < 0.5, 1.0, -1.0)
    X = rng.standard_normal((n0, d))
    for name, same in (("tanh", True), ("relu", False)):
        sigma = get_function(name)
        y = np.tanh(X @ theta)
        pm, _ = mc.giant_step(W0, [(X, y)], sigma, rate=1.5 / n0, a=eps / math.sqrt(p))
        const, _ = mc.giant_step(eps[:, None] * W0, [(X, y)], sigma, rate=1.5 / n0)
        assert np.allclose(eps[:, None] * pm, const, rtol=0, atol=1e-12) == same, name


def test_committed_report_is_regenerated_from_committed_data(tmp_path):
    """validation/reports/READOUTS.md is, whole, what the report command writes from the
    committed per-seed rows (no simulation; theory recomputed), the discussion included: its
    numbers are placeholders and its claims assertions (readouts_notes.md)."""
    from validation.spiked import readouts as R
    from validation.spiked.readouts_report import write_report

    notes = R.REPORT.with_name("readouts_notes.md").read_text(encoding="utf-8")
    path = write_report(tmp_path / "READOUTS.md", notes=notes, progress=False)
    text = path.read_text(encoding="utf-8")
    assert text == R.REPORT.read_text(encoding="utf-8")
    assert "## Discussion" in text and "![risk vs alpha" in text and "{{" not in text


@pytest.mark.slow  # ~1 min: 12 repetitions of the network and the sRF model at d = 300
def test_pm1_monte_carlo_against_theory():
    """Both simulated models against the theory at their own width p = 300 (the finite-width
    closure, THEORY.md §10.6), within the two-sided 99.9% Student quantile (11 degrees of
    freedom) of the s.e. and no bias allowance: the finite-p theory carries the O(1/p) shift the
    former 3% allowance stood for (relu/tanh pm1, d = 400-1200: |z| against it <= 1.8,
    READOUTS.md)."""
    from scipy import stats

    from validation.spiked.readouts import ReadoutCase, simulate_case

    case = ReadoutCase("t", "relu", "tanh", 1.0, alphas=(0.5, 2.0))
    for model in ("network", "srf"):
        rows = simulate_case(case, model, "pm1", d=300, seeds=12, seed=11)
        for alpha in case.alphas:
            r = np.array([row["risk"] for row in rows if row["alpha"] == alpha])
            th = risk_readout(alpha, readout="pm1", sigma="relu", target="tanh", p=300,
                              **KW).risk
            se = r.std(ddof=1) / math.sqrt(r.size)
            t = stats.t.ppf(0.9995, r.size - 1)
            assert abs(r.mean() - th) <= t * se, (model, alpha, r.mean(), th, se)
