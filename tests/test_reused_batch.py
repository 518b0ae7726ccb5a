"""The second giant step on a reused batch (docs/THEORY.md §14)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import asymptotics
from asymptotics.coefficients.functions import get_function
from asymptotics.multiindex import reused
from asymptotics.multiindex.directions import step_directions
from asymptotics.multiindex.steps import steps_mapping
from asymptotics.spiked.problem import resolve_target
from asymptotics.spiked.readouts import parse_readout

HE3 = "He3(z1)/sqrt(6)"
HE2 = "He2(z1)/sqrt(2)"


def _parts(target: str, readout: str, sigma: str = "tanh", eta=(1.0, 1.0), alpha0=2.0,
           self_term=True):
    s = get_function(sigma)
    g, k, _ = resolve_target(target)
    ro = parse_readout(readout)
    values, fr = np.array(ro.values, float), np.array(ro.weights, float)
    f1 = reused.first_step(s, g, values=values, fractions=fr, k=k, eta=eta[0], alpha0=alpha0)
    return f1, reused.second_step(f1, s, g, values=values, fractions=fr, k=k, eta1=eta[0],
                                  eta2=eta[1], alpha0=alpha0, self_term=self_term)


@pytest.mark.parametrize("target,readout,sigma", [
    (HE3, "constant", "tanh"), ("z1 + He3(z2)/sqrt(6)", "pm1", "tanh"),
    ("z1 + z1*z2", "pm1", "erf(z-1)")])
def test_fresh_second_step_by_the_reused_code_equals_the_fresh_mapping(target, readout, sigma):
    """An independent implementation (training-law variables h0, n, b; no self term) of the
    fresh second step against :func:`steps.advance` (trapezoid rule in the spike basis)."""
    mp = steps_mapping(sigma, target, steps=2, alpha0=2.0, eta=1.0, readout=readout)
    f1, sec = _parts(target, readout, sigma, self_term=False)
    a1, L1, c1 = f1.state()
    assert np.allclose(c1, mp.states[1].c, rtol=1e-5)
    assert np.allclose(L1 @ L1.T, mp.states[1].L @ mp.states[1].L.T, rtol=1e-5, atol=1e-9)
    a2, L2, c2 = sec.state
    st = mp.states[2]
    assert np.allclose(c2, st.c, rtol=2e-5)
    assert np.allclose(a2, st.a, rtol=2e-5, atol=1e-8)
    assert np.allclose(L2 @ L2.T, st.L @ st.L.T, rtol=2e-5, atol=1e-8)


def test_fresh_default_is_unchanged_and_reused_step_one_is_fresh():
    kw = dict(steps=2, alpha0=2.0, eta=1.0, readout="pm1")
    default = steps_mapping("tanh", HE3, **kw)
    fresh = steps_mapping("tanh", HE3, batch="fresh", **kw)
    again = steps_mapping("tanh", HE3, batch="reused", **kw)
    assert default.batch == "fresh" and again.batch == "reused"
    for s0, s1 in zip(default.states, fresh.states, strict=True):
        assert np.array_equal(s0.a, s1.a) and np.array_equal(s0.c, s1.c)
    # a single step cannot tell a reused batch from a fresh one
    for t in (0, 1):
        assert np.array_equal(again.states[t].a, fresh.states[t].a)
        assert np.array_equal(again.states[t].c, fresh.states[t].c)
    one = steps_mapping("tanh", HE3, steps=1, alpha0=2.0, eta=1.0, batch="reused")
    one_fresh = steps_mapping("tanh", HE3, steps=1, alpha0=2.0, eta=1.0)
    assert np.array_equal(one.states[1].c, one_fresh.states[1].c)
    r = dict(sigma="tanh", target=HE3, alpha0=2.0, eta=1.0, lam=0.01, model="srf", steps=2)
    assert asymptotics.risk(2.0, **r).risk == asymptotics.risk(2.0, batch="fresh", **r).risk
    assert not math.isclose(asymptotics.risk(2.0, batch="reused", **r).risk,
                            asymptotics.risk(2.0, **r).risk, rel_tol=1e-4)


def test_reuse_learns_he3_but_not_he2():
    """Generative exponent: He3 (one) gains a drift along theta at the second step on the same
    batch, He2 (two) does not; on fresh batches neither does. The zeros are parity zeros; the
    quadrature (pruned Gauss-Hermite, interpolated smoothing tables; ~1e-4 relative accuracy
    measured against doubled node counts) leaves them at ~1e-9, hence the bound 1e-6."""
    _, he3 = _parts(HE3, "constant")
    _, he3_fresh = _parts(HE3, "constant", self_term=False)
    _, he2 = _parts(HE2, "pm1")
    assert he3.d_theta[0, 0] < -0.05
    assert abs(he3_fresh.d_theta[0, 0]) < 1e-6
    assert np.max(np.abs(he2.d_theta)) < 1e-6
    rep = step_directions("tanh", HE3, alpha0=2.0, eta=1.0, d=1000, batch="reused")
    assert rep.learned == ((False,), (True,))
    assert step_directions("tanh", HE2, alpha0=2.0, eta=1.0, d=1000,
                           batch="reused").learned == ((False,), (False,))


def _mc_drift(target: str, d: int, seeds: int, reuse: bool) -> tuple[float, float]:
    """Mean over seeds of the second step's drift ``mean_i <w_i(2) - w_i(1), theta>`` (constant
    readout, tanh, alpha0 = 2, eta_tilde = 1), and its standard error: a direct simulation of
    the protocol, no theory code."""
    from asymptotics.coefficients.targets import target_callable
    from validation.multistep.simulator import readout_vector
    from validation.protocol import montecarlo as mc

    g, _ = target_callable(target)
    sigma = get_function("tanh")
    out = []
    for s in range(seeds):
        rng = np.random.default_rng(1000 + s)
        W = mc.sphere_rows(rng, d, d)
        th = mc.teacher_directions(rng, 1, d)
        a = readout_vector(d, "constant")
        batches = [rng.standard_normal((2 * d, d)) for _ in range(2)]
        W1 = W + d * mc.descent_direction(W, a, batches[0], g(batches[0] @ th.T), sigma)[0]
        X = batches[0] if reuse else batches[1]
        W2 = W1 + d * mc.descent_direction(W1, a, X, g(X @ th.T), sigma)[0]
        out.append(float(np.mean((W2 - W1) @ th[0])))
    return float(np.mean(out)), float(np.std(out, ddof=1) / math.sqrt(seeds))


def test_self_term_drift_against_a_direct_simulation():
    """The reused second step's drift along theta (He3, d -> infinity: -0.0789) against the
    simulated network at d = 200 (30 seeds): within the Student quantile of 29 degrees of
    freedom at a two-sided 1e-3 (3.66 s.e.; 4.78 for the 10-seed checks), no bias allowance.
    Measured (same protocol):
    -0.0782 +- 0.0024 at d = 200, -0.0774 +- 0.0024 at d = 400, -0.0822 +- 0.0039 at d = 800, so
    the finite-d bias is below the s.e.; He2 stays at 0 and a fresh second batch gives 0 (its
    drift fluctuates by ~0.1 from seed to seed at d = 200: the fresh batch's noise along theta,
    which on a reused batch is largely the first step's and cancels)."""
    from scipy import stats

    t29, t9 = stats.t.ppf(1 - 5e-4, 29), stats.t.ppf(1 - 5e-4, 9)
    _, he3 = _parts(HE3, "constant")
    theory = he3.d_theta[0, 0]
    mean, se = _mc_drift(HE3, 200, 30, reuse=True)
    assert abs(mean - theory) < t29 * se, (mean, se, theory)
    mean2, se2 = _mc_drift(HE2, 200, 10, reuse=True)
    assert abs(mean2) < t9 * se2 and abs(mean2) < 0.02, (mean2, se2)
    mean_f, se_f = _mc_drift(HE3, 200, 10, reuse=False)
    assert abs(mean_f) < t9 * se_f, (mean_f, se_f)  # a fresh step's drift fluctuates more


def test_bad_input():
    with pytest.raises(ValueError, match="batch must be one of fresh, reused, got 'same'"):
        steps_mapping("tanh", HE3, steps=2, alpha0=2.0, eta=1.0, batch="same")
    with pytest.raises(ValueError, match="steps must be <= 2 for batch='reused'"):
        steps_mapping("tanh", HE3, steps=3, alpha0=2.0, eta=1.0, batch="reused")
    with pytest.raises(ValueError, match="delta must be 0 for batch='reused'"):
        steps_mapping("tanh", HE3, steps=2, alpha0=2.0, eta=1.0, delta=0.1, batch="reused")
    with pytest.raises(ValueError, match="batch must be one of"):
        asymptotics.risk(2.0, sigma="tanh", target=HE3, model="srf", steps=2, batch="x")


def test_steps_command_batch(tmp_path, capsys):
    from asymptotics.cli.curve import main

    out = tmp_path / "s.csv"
    assert main(["steps", "--steps", "2", "--eta", "1", "--alpha", "2", "--sigma", "tanh",
                 "--target", HE3, "--alpha0", "2", "--readout", "constant", "--batch", "reused",
                 "--model", "srf", "--quiet", "--out", str(out)]) == 0
    import pandas as pd

    df = pd.read_csv(out)
    assert set(df["batch"]) == {"reused"} and df["converged"].all()
    ref = asymptotics.risk(2.0, sigma="tanh", target=HE3, alpha0=2.0, eta=1.0, lam=0.01,
                           model="srf", steps=2, batch="reused")
    assert math.isclose(df[df.step == 2].risk.iloc[0], ref.risk, rel_tol=1e-9)
    capsys.readouterr()
    assert main(["steps", "--steps", "3", "--eta", "1", "--batch", "reused", "--model",
                 "srf"]) == 2
    err = capsys.readouterr().err
    assert "steps must be <= 2 for batch='reused'" in err and "Traceback" not in err


def test_guide_block_runs():
    """The reused-batch Python block of docs/guide.md runs and says what it claims."""
    import pathlib

    text = (pathlib.Path(__file__).resolve().parents[1] / "docs" / "guide.md").read_text()
    start = text.index("The second step on the SAME batch")
    code = text[text.index("```python", start) + 9:text.index("```", text.index("```python",
                                                                                 start) + 9)]
    namespace = {"A": asymptotics}
    exec(compile(code, "guide.md", "exec"), namespace)
    rep = step_directions("tanh", HE3, alpha0=2, eta=1.0, d=1000, batch="reused")
    assert 0.4 < rep.direction[1, 0] < 0.5 and rep.direction[0, 0] < 0.1


@pytest.mark.parametrize("target,readout,sigma", [
    ("z1 + He3(z2)/sqrt(6)", "pm1", "tanh"), (HE3, "constant", "relu"),
    ("z1 + z1*z2", "pm1", "erf(z-1)")])
def test_pruned_rules_match_the_full_rules(target, readout, sigma, monkeypatch):
    """The second step's pruned (z, b) and h0 rules against the full tensor rules (the
    pre-pruning integral, the same tables): every part within 1e-6 of its scale."""
    fast = _parts(target, readout, sigma)[1]
    monkeypatch.setattr(reused, "PRUNE_OUTER", 0.0)
    monkeypatch.setattr(reused, "PRUNE_H0", 0.0)
    full = _parts(target, readout, sigma)[1]
    for name in ("d_theta", "d_b", "C", "d_w0", "d_n", "row_var", "theta_cov", "cross",
                 "row_theta_var"):
        x, y = getattr(fast, name), getattr(full, name)
        assert np.abs(x - y).max() <= 1e-6 * max(np.abs(y).max(), 1e-3), name


def test_committed_report_is_regenerated_from_committed_data():
    """validation/reports/REUSED.md is exactly the text its command writes from the committed
    data (every number in it, the findings' prose included, is computed from the CSV and the
    theory; about 15 s)."""
    import pandas as pd

    from validation.experiments import reused_report as report

    df = pd.read_csv(report.DATA)
    new = report.text(report.compare(df), df).splitlines()
    old = report.REPORT.read_text().splitlines()
    assert len(new) == len(old)
    for i, (a, b) in enumerate(zip(new, old, strict=True)):
        assert a == b, f"line {i + 1}: regenerated {a!r}, committed {b!r}"


@pytest.mark.parametrize("argv,says", [
    (["run", "--store", "runs.csv"], "--store must name a .sqlite file"),
    (["run", "--d", "1000", "--seeds", "6", "4"], "--d and --seeds need one value each"),
])
def test_run_bad_input_is_one_line(argv, says, tmp_path, monkeypatch, capsys):
    from validation.experiments import reused_batch as RB

    monkeypatch.chdir(tmp_path)
    assert RB.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and says in err and len(err.splitlines()) == 1
    assert not list(tmp_path.iterdir())


def test_report_refuses_a_missing_store(tmp_path, capsys):
    from validation.experiments import reused_report as report

    assert report.main(["--store", str(tmp_path / "none.sqlite")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --store") and len(err.splitlines()) == 1


def test_campaign_plan_is_the_committed_one():
    """MAIN at d = 1000 (6 seeds), LARGE at d = 2000 (4), the eta_tilde scan at d = 1000 (3)."""
    from validation.experiments import reused_batch as RB

    c = RB.campaign()
    assert len(c.settings) == 6 * 6 + 4 * 4 + 3 * 3
    rec = c.record_of(c.settings[0])["setting"]
    assert rec["setting"]["_type"] == "Setting" and rec["lam"] == RB.LAM and rec["seed"] == 0
