"""Several giant steps as K neuron groups (docs/THEORY.md §12): reductions with independent
checks (the one-step closed forms, symmetry, a single-index target in a rotated basis, the
groups of a constructed first layer) and the API's errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import asymptotics as A
from asymptotics.coefficients.cget import ge_coefficients
from asymptotics.multiindex.steps import GroupState, group_params
from asymptotics.multiindex.steps_risk import state_from_weights
from asymptotics.spiked.readouts import parse_readout
from asymptotics.step.srf import step_moments


@pytest.mark.parametrize("sigma,target,readout", [
    ("tanh", "tanh", "constant"), ("relu", "tanh", "pm1"), ("erf(z-1)", "z+z**2", "pm1"),
    ("erf(z-1)", "sin(z)", {1: 0.3, -2: 0.7}),
])
def test_one_step_is_the_closed_form(sigma, target, readout):
    """T = 1: the recursion's Gaussian integrals equal the one-step formulas of §3/§11, which
    are written with the Gaussian-equivalence coefficients (closed forms / 1-d quadrature)."""
    ro = parse_readout(readout)
    m = A.steps_mapping(sigma, target, steps=1, alpha0=2.0, eta=1.5, delta=0.1, readout=ro)
    ref = step_moments(ge_coefficients(sigma, target), alpha0=2.0, eta=1.5, delta=0.1,
                       values=ro.values, mean=ro.mean)
    st = m.states[1]
    v_sign = np.sign(ref.gamma) if ref.gamma else 1.0
    for g, (load, _, c) in enumerate(ref.groups):
        # the spike is load * v, v = gamma theta + rho t: its target part and its outside part
        assert st.a[g, 0] == pytest.approx(load * ref.gamma, rel=1e-7, abs=1e-10)
        outside = (load * math.sqrt(max(1 - ref.gamma**2, 0.0))) ** 2
        assert (st.L @ st.L.T)[g, g] == pytest.approx(outside, rel=1e-7, abs=1e-10)
        assert st.c[g] == pytest.approx(c, rel=1e-7)
    assert v_sign != 0


def test_a_second_step_of_zero_is_one_step():
    """steps=2 with eta = (1, 0) goes through the K-group solver; steps=1 through the sRF
    equations of §5: two solvers, one number."""
    one = A.risk(2.0, model="srf", steps=1).risk
    two = A.risk(2.0, model="srf", steps=2, eta=(1.0, 0.0)).risk
    assert two == pytest.approx(one, rel=1e-7)


def test_odd_activation_pm1_equals_constant_after_several_steps():
    """An odd sigma: the minus group moves exactly opposite to the plus group at every step,
    and ridge does not see feature signs, so pm1 (K = 2) equals constant (K = 1)."""
    kw = dict(steps=3, model="srf", sigma="tanh", target="z1 + z1*z2", alpha0=8.0,
              eta=(1.0, 2.0, 2.0))
    const = A.risk(1.5, readout="constant", **kw)
    pm1 = A.risk(1.5, readout="pm1", **kw)
    assert const.converged and pm1.converged
    assert pm1.risk == pytest.approx(const.risk, rel=1e-6)


def test_large_batch_limit_is_continuous():
    kw = dict(steps=3, eta=(2.0, 8.0, 16.0), readout="pm1")
    inf = A.steps_mapping("erf(z-1)", "z1 + z1*z2", alpha0=math.inf, **kw).states[-1]
    big = A.steps_mapping("erf(z-1)", "z1 + z1*z2", alpha0=1e9, **kw).states[-1]
    np.testing.assert_allclose(big.a, inf.a, rtol=1e-6)
    np.testing.assert_allclose(big.c, inf.c, rtol=1e-6)
    assert inf.L.shape[1] == 0  # no batch noise: the spikes stay in the target span


def test_rotated_target_is_the_single_index_problem():
    """A target of one direction u = 0.6 theta1 + 0.8 theta2 with the spike along u: the
    rotation of §12.3 must give the single-index K-group problem along u."""
    r_, c_ = 1.3, 0.8
    st = GroupState(1, np.array([[0.6 * r_, 0.8 * r_]]), np.zeros((1, 0)), np.array([c_]))
    two = A.risk_spiked(1.5, sigma="relu", lam=0.05, beta=1.0,
                        **group_params(st, "tanh(0.6*z1 + 0.8*z2)", (1.0,)))
    one = A.risk_spiked(1.5, sigma="relu", target="tanh", lam=0.05, beta=1.0,
                        loadings=[[r_]], bulk=[c_], fractions=[1.0], overlaps=[[1.0]])
    assert two.converged and one.converged
    assert two.risk == pytest.approx(one.risk, rel=1e-6)


def test_state_from_weights_reads_a_constructed_layer():
    rng = np.random.default_rng(3)
    d, p, k = 400, 4000, 2
    theta = np.linalg.qr(rng.standard_normal((d, k + 1)))[0].T  # theta1, theta2, an outside t
    eps = np.where(np.arange(p) < p // 4, 1.0, -1.0)
    spikes = {1.0: 1.2 * theta[0] + 0.5 * theta[2], -1.0: -0.7 * theta[0] + 0.4 * theta[1]}
    bulk = {1.0: 0.5, -1.0: 2.0}
    G = rng.standard_normal((p, d)) / math.sqrt(d)
    W = np.array([math.sqrt(bulk[e]) * g + spikes[e] for g, e in zip(G, eps, strict=True)])
    st = state_from_weights(W, eps, theta[:k], values=(1.0, -1.0))
    np.testing.assert_allclose(st.a, [[1.2, 0.0], [-0.7, 0.4]], atol=0.02)
    np.testing.assert_allclose(st.c, [0.5, 2.0], rtol=0.02)
    np.testing.assert_allclose(st.L @ st.L.T, [[0.25, 0.0], [0.0, 0.0]], atol=0.01)


@pytest.mark.parametrize("kw,match", [
    (dict(steps=2, model="rf"), "model must be 'network' or 'srf'"),
    (dict(steps=2, gamma=0.5), "does not support gamma"),
    (dict(steps=0), "steps must be an integer >= 1"),
    (dict(steps=0, model="srf"), "steps must be an integer >= 1"),
    (dict(steps=2.5, model="srf"), "steps must be an integer"),
    (dict(steps=2, model="srf", eta=(1.0,)), "one value per step"),
    (dict(steps=2, model="srf", lam="optimal"), "does not support lam"),
    (dict(steps=2, model="srf", gamma=0.5), "does not support gamma"),
    (dict(steps=2, model="srf", eta=(1.0, -1.0)), "eta"),
])
def test_errors(kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        A.risk(2.0, **kw)


def test_theory_matches_the_committed_staircase_simulations():
    """The overlaps of the network after 1-3 giant steps (committed Monte Carlo of the protocol,
    d = 1024, 8 seeds: validation/reports/MULTISTEP.md) against the d -> infinity theory: every
    learned entry within the Student quantile of its seeds (two-sided 1e-3 per entry) times its
    standard error, with no finite-d allowance (none needed: measured |z| <= 0.9). It was 5
    seeds at 3 s.e."""
    import pandas as pd
    from scipy import stats

    from validation.multistep.experiment import FULL, REPORTS, configs, summary, theory_overlaps

    df = pd.read_csv(REPORTS / "data" / "multistep_staircase.csv")
    s = summary(df)
    dmax = int(s["d"].max())
    assert dmax >= 1000
    cfg = [c for c, _ in configs("staircase", FULL) if c.d == dmax][0]
    th = theory_overlaps(cfg)
    learned = th[th["theory"] > 0.05]
    assert len(learned) == 6  # theta1 at step 1; theta1, 2 at step 2; all three at step 3
    seeds = df[df["d"] == dmax]["repetition"].nunique()
    assert seeds >= 8
    t = stats.t.ppf(1 - 5e-4, seeds - 1)
    for r in learned.itertuples():
        m = s[(s["d"] == dmax) & (s["step"] == r.step) & (s["direction"] == r.direction)]
        z = (m["mean_overlap_mean"].iloc[0] - r.theory) / m["mean_overlap_se"].iloc[0]
        assert abs(z) <= t, (r.step, r.direction, z, t)


def test_steps_command(tmp_path, capsys):
    from asymptotics.cli.curve import main

    out = tmp_path / "s.csv"
    assert main(["steps", "--steps", "2", "--eta", "1", "--alpha", "1,2", "--quiet",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "step 2" in text and out.exists()
    import pandas as pd

    df = pd.read_csv(out)
    assert sorted(df["step"].unique()) == [0, 1, 2] and df["converged"].all()
    with pytest.raises(SystemExit) as exc:  # argparse: one error line, exit status 2
        main(["steps", "--alpha0", "-1"])
    assert exc.value.code == 2
    assert main(["steps", "--steps", "3", "--eta", "1,2"]) == 2
    err = capsys.readouterr().err
    assert "one value per step" in err and "Traceback" not in err


def test_exact_target_power_of_the_comparison():
    """E g^2 of the control variate: closed forms (He-orthogonality: E[(z1 z2)^2] = 1, ...)."""
    from validation.multistep.theory import target_power

    assert target_power("z1 + z1*z2") == pytest.approx(2.0, rel=1e-8)
    assert target_power("z1 + z1*z2 + z1*z2*z3") == pytest.approx(3.0, rel=1e-8)
    assert target_power("He2(z1)") == pytest.approx(2.0, rel=1e-8)
