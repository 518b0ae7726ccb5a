"""Spectra after one and two large steps: bulk edge, outlier detection, the predicted
counts of ``asymptotics.multiindex.spikes`` and the ``spectrum`` command.

Independent references: the Marchenko-Pastur edge ``1 + sqrt(beta)`` of a p x d matrix with
entries of variance 1/d; the BBP transition of a rank-one additive perturbation ``theta u v^T``
(Benaych-Georges & Nadakuditi 2012, rectangular case): an outlier iff ``theta > beta^(1/4)``,
located at ``sqrt((1 + theta^2)(beta + theta^2)) / theta``; the counts worked by hand.
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from scipy import integrate

from asymptotics.multiindex import spikes
from validation import spectrum as sp
from validation.cli import main as cli_main

P, D = 200, 400  # beta = 1/2
BETA = P / D
MP_EDGE = 1 + math.sqrt(BETA)


def _unit(rng, n):
    v = rng.standard_normal(n)
    return v / np.linalg.norm(v)


def _bbp_location(theta: float, beta: float) -> float:
    return math.sqrt((1 + theta**2) * (beta + theta**2)) / theta


# ---------------------------------------------------------------------------------------------
# Bulk edge and outlier detection


def _within(x: np.ndarray, limit: float, quantity: str, d: int = D) -> None:
    """The mean of the draws ``x`` within the Student quantile of their sample size (two-sided
    1e-3) times its s.e. of ``limit``, plus the finite-d bias measured as c/d
    (validation/reports/BIAS_SLOPES.md, setting edge-bbp-0.5: (|c| + 3 s.e.)/d)."""
    from scipy import stats

    from validation.experiments import bias_slopes as BS

    t = stats.t.ppf(1 - 5e-4, x.size - 1)
    band = t * x.std(ddof=1) / math.sqrt(x.size) + BS.slope("edge-bbp-0.5", quantity).allowance(d)
    assert abs(x.mean() - limit) <= band, (quantity, x.mean(), limit, band)


def test_bulk_edge_of_W0_matches_marchenko_pastur():
    """Eight draws of W0 (p = 200, d = 400): in every draw the singular values are numpy's and
    neither method finds an outlier; the mean of each estimated edge is at the Marchenko-Pastur
    edge 1 + sqrt(beta) within the Student band of eight draws plus its measured finite-d bias
    (it was three single draws within a fixed 0.05 / 0.025)."""
    edges = {"fit": [], "mp": []}
    for seed in range(8):
        W0 = sp.sphere_rows(np.random.default_rng(seed), P, D)
        s = sp.singular_values(W0)
        np.testing.assert_allclose(s, np.linalg.svd(W0, compute_uv=False), atol=1e-12)
        for method in edges:
            e = sp.bulk_edge(s, W0.shape, method=method)
            assert e.n_outliers == 0 and e.threshold > e.edge, (seed, method)
            edges[method].append(e.edge)
    for method, x in edges.items():
        _within(np.array(x), MP_EDGE, f"edge_{method}")


def test_mp_density_is_normalised_with_the_right_support():
    x = np.linspace(0, 4, 40001)
    f = sp.mp_density(x, 0.5)
    assert abs(np.trapezoid(f, x) - 1) < 1e-3
    assert f[x < (1 - math.sqrt(0.5)) ** 2].max() == 0 and f[x > MP_EDGE**2].max() == 0
    # median: direct quadrature of the density (no substitution) vs mp_median's
    for q in (0.5, 1.0):
        med = sp.mp_median(q)
        lo = (1 - math.sqrt(q)) ** 2
        mass, _ = integrate.quad(lambda t, q=q: float(sp.mp_density(np.array([t]), q)[0]), lo, med,
                                 limit=400)
        assert abs(mass - 0.5) < 1e-6
    assert abs(sp.mp_median(1.0) - 0.6528) < 1e-3  # Gavish & Donoho (2014): mu_1 = 0.6528


@pytest.mark.parametrize("method", ["fit", "mp"])
def test_bbp_spike_above_threshold_is_detected_below_is_not(method):
    """Eight draws of W0 (p = 200, d = 400) with planted rank-one spikes, theta_c = beta^(1/4) =
    0.841: in every draw theta = 2 gives one outlier, 0.5 none, (2, 0.5) one and (2, 3) two;
    the mean outlier locations are at sqrt((1 + theta^2)(beta + theta^2))/theta (2.372 and
    3.249) within the Student band of eight draws plus their measured finite-d bias (it was
    one draw within a fixed 0.15)."""
    from validation.experiments.bias_slopes.spectrum import bbp_location

    locs = {"outlier@2": [], "two_outliers@3": [], "two_outliers@2": []}
    for seed in range(8):
        rng = np.random.default_rng([7, seed])
        W0 = sp.sphere_rows(rng, P, D)
        u1, u2 = _unit(rng, P), _unit(rng, P)
        v1, v2 = _unit(rng, D), _unit(rng, D)
        strong = W0 + 2.0 * np.outer(u1, v1)
        weak = W0 + 0.5 * np.outer(u2, v2)
        both = W0 + 2.0 * np.outer(u1, v1) + 0.5 * np.outer(u2, v2)
        two = W0 + 2.0 * np.outer(u1, v1) + 3.0 * np.outer(u2, v2)
        counts = {}
        for name, M in [("strong", strong), ("weak", weak), ("both", both), ("two", two)]:
            ws = sp.weight_spectrum(M, method=method)
            counts[name] = ws.n_outliers
            if name == "strong" and ws.n_outliers:
                locs["outlier@2"].append(ws.outliers[0])
            if name == "two" and ws.n_outliers == 2:
                hi, lo = np.sort(ws.outliers)[::-1]
                locs["two_outliers@3"].append(hi)
                locs["two_outliers@2"].append(lo)
        assert counts == {"strong": 1, "weak": 0, "both": 1, "two": 2}, (seed, counts)
    for q, theta in (("outlier@2", 2.0), ("two_outliers@3", 3.0), ("two_outliers@2", 2.0)):
        assert _bbp_location(theta, BETA) == pytest.approx(bbp_location(theta, BETA))
        _within(np.array(locs[q]), _bbp_location(theta, BETA), q)


def test_outlier_vectors_align_with_the_planted_spike():
    rng = np.random.default_rng(3)
    W0 = sp.sphere_rows(rng, P, D)
    u, v = _unit(rng, P), _unit(rng, D)
    theta = 3.0
    ws = sp.weight_spectrum(W0 + theta * np.outer(u, v), directions=v[None, :])
    # right vectors (in R^d, the larger side): overlap^2 -> 1 - (beta + theta^2) /
    # (theta^2 (theta^2 + 1)) = 0.894 (Benaych-Georges & Nadakuditi); sd 0.003 at p = 200
    expected = math.sqrt(1 - (BETA + theta**2) / (theta**2 * (theta**2 + 1)))
    assert ws.n_outliers == 1
    assert abs(ws.right_overlaps[0, 0] - expected) < 0.02


def test_bulk_edge_rejects_bad_input():
    with pytest.raises(ValueError, match="method must be one of"):
        sp.bulk_edge(np.ones(50), (50, 100), method="median")
    with pytest.raises(ValueError, match="min\\(p, d\\)"):
        sp.bulk_edge(np.ones(10), (50, 100))


# ---------------------------------------------------------------------------------------------
# Predicted counts, worked by hand


@pytest.mark.parametrize(
    "a1, a2, expected",
    [
        (0.2, 0.35, 1),  # 0.35 / 0.3 = 1.167
        (0.1, 0.3, 0),  # 0.3 / 0.4 = 0.75
        (0.3, 0.45, 2),  # 0.45 / 0.2 = 2.25
        (0.4, 0.45, 4),  # 0.45 / 0.1 = 4.5
        (0.0, 0.45, 0),  # 0.45 / 0.5 = 0.9
        (0.35, 0.2, 1),  # 0.2 / 0.15 = 1.333
    ],
)
def test_two_step_outlier_count_hand_worked(a1, a2, expected):
    assert spikes.two_step_outlier_count(a1, a2) == expected
    assert not spikes.on_integer_boundary(a1, a2, width=0.05)


def test_integer_boundary_and_exponent_checks():
    assert spikes.on_integer_boundary(0.2, 0.3)  # 0.3 / 0.3 = 1
    assert spikes.on_integer_boundary(0.3, 0.4)  # 0.4 / 0.2 = 2
    assert spikes.two_step_outlier_count(0.3, 0.4) == 2
    with pytest.raises(ValueError, match=r"a1 must be in \[0, 1/2\)"):
        spikes.two_step_outlier_count(0.5, 0.1)
    with pytest.raises(ValueError, match=r"a2 must be in \[0, 1/2\)"):
        spikes.two_step_outlier_count(0.1, -0.1)


def test_two_step_term_exponents():
    # term k has operator norm p^(a2 - k (1/2 - a1)): (0.3, 0.45) -> 0.45, 0.25, 0.05, -0.15
    np.testing.assert_allclose(spikes.two_step_term_exponents(0.3, 0.45, 3),
                               [0.45, 0.25, 0.05, -0.15], atol=1e-12)
    assert spikes.boundary_gap(0.3, 0.45) == pytest.approx(0.05)
    assert spikes.boundary_gap(0.2, 0.3) == pytest.approx(0.0, abs=1e-12)


def test_one_step_spike_thresholds_and_counts():
    assert [spikes.one_step_spike_threshold(l) for l in (1, 2, 3, 4)] == [0, 0.25, 1 / 3, 0.375]
    generic = [1.0] * 9  # every Hermite coefficient nonzero
    odd = [0, 1, 0, 1, 0, 1, 0, 1, 0]  # e.g. tanh: E sigma^(l) = 0 for even l
    assert spikes.one_step_spike_count(0.1, generic) == 1  # l = 1
    assert spikes.one_step_spike_count(0.3, generic) == 2  # l = 1, 2 (0.3 < 1/3)
    assert spikes.one_step_spike_count(0.35, generic) == 3  # l = 1, 2, 3 (0.35 < 3/8)
    assert spikes.one_step_spike_orders(0.35, odd) == (1, 3)
    assert spikes.one_step_spike_count(0.0, generic) == 0  # a = 0: order one, BBP-dependent


def test_hermite_coefficients_of_known_functions():
    # z^2 = He_0 + He_2 -> c = (1, 0, sqrt 2, 0, ...); tanh is odd
    c = spikes.hermite_coefficients("z**2", 4)
    np.testing.assert_allclose(c, [1, 0, math.sqrt(2), 0, 0], atol=1e-12)
    t = spikes.hermite_coefficients("tanh", 6)
    assert all(abs(t[l]) < 1e-12 for l in (0, 2, 4, 6)) and abs(t[1]) > 0.5
    assert spikes.information_exponent(spikes.hermite_coefficients("z**3 - 3*z", 5)) == 3
    # activation-aware two-step count: tanh has E sigma^(2) = 0, so k = 1 is missing at (0.3, 0.45)
    assert spikes.two_step_spike_orders(0.3, 0.45, t) == (2,)
    assert spikes.two_step_outlier_count_for(0.3, 0.45, t) == 1


def test_learnable_directions_fresh_vs_reused():
    # z1 + He3(z2): E[g z2 kappa^k] = 0 for fresh kappa = z1 + rho zeta; reused adds g/alpha0 and
    # E[He3(z2)^3 z2] != 0 at k = 2, so the He3 direction needs K >= 2 and the reused batch
    fresh = spikes.learnable_directions("z1 + z2**3 - 3*z2", a1=0.3, a2=0.45, batch="fresh")
    reused = spikes.learnable_directions("z1 + z2**3 - 3*z2", a1=0.3, a2=0.45, batch="reused")
    assert fresh.learned == (True, False)
    assert reused.learned == (True, True) and reused.first_order[1] == 2
    # with K = 1 the k = 2 term is absent: not learned even with reuse
    short = spikes.learnable_directions("z1 + z2**3 - 3*z2", a1=0.2, a2=0.35, batch="reused")
    assert short.learned == (True, False)
    # an even He2 direction is invisible to both: (y, kappa) is even in z2
    for batch in ("fresh", "reused"):
        rep = spikes.learnable_directions("z1 + z2**2 - 1", a1=0.3, a2=0.45, batch=batch)
        assert rep.learned == (True, False)
    # He2 + He3 (information exponent 2, not even): reuse sees E[g^2 z2] = 12 / alpha0 at k = 1
    rep = spikes.learnable_directions("z1 + z2**2 - 1 + z2**3 - 3*z2", a1=0.2, a2=0.35,
                                      batch="reused")
    assert rep.learned == (True, True) and rep.first_order[1] == 1
    with pytest.raises(ValueError, match="batch must be"):
        spikes.learnable_directions("z1", a1=0.2, a2=0.3, batch="old")


# ---------------------------------------------------------------------------------------------
# Simulation, end to end (small d, qualitative)


def test_one_step_with_large_a_gives_an_aligned_outlier():
    cfg = sp.StepConfig(d=400, a1=0.2, sigma="tanh(z+0.5)", readout="uniform", eta1=1.0)
    run = sp.run_spectrum(cfg)
    assert run.weights.n_outliers >= 1
    # the spike's right vector is u = (1/n) X^T y ~ theta + noise of norm sqrt(d/n) = 1, so
    # <u, theta>/|u| -> 1/sqrt 2; the spike (norm ~ 0.56 sqrt(2) p^0.2 = 2.3) is well above BBP,
    # which lowers the overlap to 0.707 * 0.95 = 0.67
    assert run.weights.right_overlaps[0, 0] > 0.5
    assert run.measured == run.predicted == 1  # SPECTRA.md section 1: order 1 found at every a
    control = sp.run_spectrum(sp.StepConfig(d=400, a1=0.2, eta1=0.0))
    assert control.weights.n_outliers == 0 and control.measured == 0


def test_two_steps_add_an_outlier_where_the_ratio_exceeds_one():
    kw = dict(d=600, sigma="tanh(z+0.5)", readout="uniform", eta1=1.0, eta2=6.0)
    above = sp.run_spectrum(sp.StepConfig(a1=0.3, a2=0.4, **kw))  # ratio 2, terms k = 1 strong
    below = sp.run_spectrum(sp.StepConfig(a1=0.0, a2=0.1, **kw))  # ratio 0.2
    assert above.measured >= 1 and below.measured == 0
    assert above.weights.n_outliers >= 2
    # the new outlier's left vector is a polynomial of degree >= 2 of the readout
    assert above.weights.left_degree[1] >= 2


@pytest.mark.parametrize("seed", [0, 1])
def test_two_step_count_where_the_report_says_it_agrees(seed):
    """SPECTRA.md section 2: at gap >= 0.075 the count agrees; (a1, a2) = (0.3, 0.3) at d = 1000
    (gap 0.1) with the experiment's own configuration and seeds: exactly the predicted outlier."""
    from validation.experiments.spectra import _two_step, simulate_row

    row = simulate_row(_two_step(1000, 0.3, 0.3, seed))
    assert row["predicted"] == 1
    assert row["measured"] == row["predicted"]


def test_simulation_is_reproducible_and_steps_follow_the_convention():
    cfg = sp.StepConfig(d=64, a1=0.1, a2=0.2, batch="reused", seed=5)
    s1, s2 = sp.simulate(cfg), sp.simulate(cfg)
    assert np.array_equal(s1.W2, s2.W2)
    np.testing.assert_allclose(np.linalg.norm(s1.W0, axis=1), 1.0)
    assert cfg.learning_rates == pytest.approx((cfg.p ** 0.6, cfg.p ** 0.7))
    # the first step moves every row along the same gradient formula: check one row by hand
    sigma = sp.get_function(cfg.sigma)
    X, y = sp.draw_batch(sp.rng_for(5, "batch1"), cfg.n, s1.theta,
                         sp.target_function(cfg.target)[0], 0.0)
    f = sigma(X @ s1.W0.T) @ s1.a / math.sqrt(cfg.p)
    j = 3
    grad_j = ((y - f) * sigma.derivative(X @ s1.W0[j])) @ X * s1.a[j] / (cfg.n * math.sqrt(cfg.p))
    np.testing.assert_allclose(s1.W1[j], s1.W0[j] + cfg.learning_rates[0] * grad_j, atol=1e-12)


def test_step_config_rejects_bad_input():
    with pytest.raises(ValueError, match="batch must be one of"):
        sp.StepConfig(d=100, a1=0.1, batch="old")
    with pytest.raises(ValueError, match=r"a1 must be in \[0, 0.5\]"):
        sp.StepConfig(d=100, a1=0.7)
    with pytest.raises(ValueError, match="d must be an integer"):
        sp.StepConfig(d=4, a1=0.1)


# ---------------------------------------------------------------------------------------------
# Command line


def test_cli_prints_outliers_and_predicted(capsys):
    rc = cli_main(["spectrum", "--steps", "2", "--a1", "0.2", "--a2", "0.35", "--d", "200"])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0
    assert any(line.startswith("outliers=") and line[9:].isdigit() for line in out)
    assert "predicted=1" in out
    assert any(line.startswith("singular_values=") for line in out)
    rc = cli_main(["spectrum", "--steps", "1", "--a1", "0.3", "--d", "200"])
    out = capsys.readouterr().out.splitlines()
    assert rc == 0 and "predicted=2" in out  # tanh(z+0.5): orders 1 and 2 (0.3 > 1/4)


def test_cli_plot(tmp_path):
    png = tmp_path / "s.png"
    rc = cli_main(["spectrum", "--steps", "1", "--a1", "0.2", "--d", "120", "--plot", str(png)])
    assert rc == 0 and png.stat().st_size > 10_000


def test_cli_bad_input_exits_2(capsys):
    p = subprocess.run([sys.executable, "-m", "validation", "spectrum", "--a1", "0.7"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "a1" in lines[0] and lines[0].startswith("error:")
    for args, word in [(("--d", "5"), "d"), (("--batch", "old"), "batch"),
                       (("--sigma", "nope"), "nope"), (("--target", "z1 +"), "z1")]:
        try:
            rc = cli_main(["spectrum", *args])
        except SystemExit as exc:  # argparse rejects before run_cli
            rc = exc.code
        err = capsys.readouterr().err
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert rc == 2, (args, err)
        assert len(lines) == 1 and word in lines[0] and lines[0].startswith("error:")


# ---------------------------------------------------------------------------------------------
# Analysis helpers of the experiment script (synthetic rows with known answers)


def test_exponent_fit_recovers_a_known_power_law():
    import pandas as pd

    from validation.experiments.spectra_tables import exponent_table

    rows = []
    for p in (250, 500, 1000, 2000):
        row = dict(a1=0.3, a2=0.45, p=p, seed=0)
        for m in range(1, 5):
            e = 0.45 - (m - 1) * 0.2  # e_k of term k = m - 1
            floor = 0.1
            row[f"amp{m}"] = math.sqrt((2.0 * p**e) ** 2 + floor**2)
            row[f"floor{m}"] = floor
        rows.append(row)
    t = exponent_table(pd.DataFrame(rows), k_max=3)
    np.testing.assert_allclose(t.fitted, t.e_k, atol=1e-9)
    np.testing.assert_allclose(t.e_k, [0.45, 0.25, 0.05, -0.15], atol=1e-12)


def test_agreement_by_gap_counts_points():
    import pandas as pd

    from validation.experiments.spectra_tables import agreement_by_gap, grid_table

    # (0.2, 0.35): ratio 1.17, gap 0.05, pred 1; (0.0, 0.1): gap 0.4, pred 0; (0.2, 0.3): gap 0
    df = pd.DataFrame(dict(d=1000, a1=[0.2, 0.2, 0.0, 0.0, 0.2, 0.2],
                           a2=[0.35, 0.35, 0.1, 0.1, 0.3, 0.3], measured=[1, 0, 0, 0, 0, 0],
                           predicted=[1, 1, 0, 0, 1, 1], edge=1.7, seconds=1.0))
    table = grid_table(df)
    # sorted by (a1, a2): (0, 0.1) agrees; (0.2, 0.3) measures 0 of 1; (0.2, 0.35) one seed misses
    assert list(table.agree) == [True, False, False]
    share = agreement_by_gap(table).set_index("gap")
    assert share.loc["all", "points"] == 3 and share.loc["all", "agree"] == 1
    assert share.loc["gap < 0.025 (on a boundary)", "under"] == 1


def test_report_section1_is_written_from_the_committed_numbers():
    """SPECTRA.md's section-1 verdict is generated from the data and asserted against them."""
    import pandas as pd

    from validation.experiments.spectra import REPORTS
    from validation.experiments.spectra_text import onestep_result

    one = pd.read_csv(REPORTS / "data" / "spectra_onestep.csv")
    text = onestep_result(one)
    assert "`E sigma^(2)/2 = -0.084`" in text and "`E sigma^(3)/6 = -0.047`" in text
    assert "`1000^0.1 = 2`" in text and "`1000^0.08 = 1.7`" in text
    broken = one.assign(measured=one["predicted"])  # as if every predicted order were found
    with pytest.raises(AssertionError, match="no longer matches"):
        onestep_result(broken)
