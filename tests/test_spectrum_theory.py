"""asymptotics.spectrum (docs/THEORY.md §16) against independent closed forms (Pennington and
Worah 2017's quartic for the lazy features, Marchenko-Pastur for the lazy weights) and against a
small Monte Carlo of the sRF model; the heavy comparison is validation/reports/SPECTRA_THEORY.md."""

from __future__ import annotations

import math

import numpy as np
import pytest

import asymptotics
from asymptotics.coefficients.cget import ge_coefficients
from validation.experiments.spectra_sim import kolmogorov, simulate_srf


def pw_candidates(z: complex, phi: float, psi: float, eta: float, zeta: float) -> np.ndarray:
    """Pennington and Worah (2017), M = Y Y^T/m, Y = f(W X/sqrt(n0)), f centred:
    G(z) = psi/z P(1/(z psi)) + (1 - psi)/z with P a root of
    P = 1 + (eta - zeta) t P_phi P_psi + P_phi P_psi t zeta/(1 - zeta t P_phi P_psi)."""
    t = 1.0 / (z * psi)
    Pv = np.polynomial.Polynomial([0.0, 1.0])
    A = (1 + (Pv - 1) * phi) * (1 + (Pv - 1) * psi)
    roots = ((Pv - 1 - (eta - zeta) * t * A) * (1 - zeta * t * A) - A * t * zeta).roots()
    return psi / z * roots + (1 - psi) / z


@pytest.mark.parametrize("alpha,beta", [(4.0, 0.5), (0.5, 1.0)])
def test_lazy_features_match_pennington_worah(alpha: float, beta: float) -> None:
    law = asymptotics.spectrum("features", alpha=alpha, beta=beta, eta=0.0, model="rf",
                               sigma="tanh")
    k = ge_coefficients("tanh", "tanh")
    eta, zeta = k.mu1 ** 2 + k.mu_star ** 2, k.mu1 ** 2
    r = alpha / beta  # our eigenvalues are (n/p) times theirs
    lo, hi = law.support[0][0], law.edge
    for x in np.linspace(lo, hi, 6)[1:-1]:
        z = x + 1e-9j
        m = law.stieltjes(z)[0]
        cands = -pw_candidates(z / r, 1.0 / alpha, 1.0 / beta, eta, zeta) / r
        assert np.min(np.abs(cands - m)) < 1e-8 * abs(m)
    assert law.atom == pytest.approx(max(0.0, 1.0 - alpha / beta))
    assert law.mass == pytest.approx(1.0, abs=2e-3)


@pytest.mark.parametrize("beta", [0.5, 2.0])
def test_lazy_weights_are_marchenko_pastur(beta: float) -> None:
    law = asymptotics.spectrum("weights", beta=beta, eta=0.0, model="rf")
    a, b = (1 - math.sqrt(beta)) ** 2, (1 + math.sqrt(beta)) ** 2
    assert law.support[0][0] == pytest.approx(a, rel=2e-3)
    assert law.edge == pytest.approx(b, rel=2e-3)
    x = np.linspace(a, b, 9)[1:-1]
    mp = np.sqrt((b - x) * (x - a)) / (2 * math.pi * beta * x)
    np.testing.assert_allclose(law.density(x), mp, rtol=1e-6)
    assert law.atom == pytest.approx(max(0.0, 1 - 1 / beta))
    assert law.cdf([b * 1.01])[0] == pytest.approx(1.0, abs=2e-3)
    assert law.outliers == ()


def test_srf_against_monte_carlo() -> None:
    """sRF at d = 600 (8 draws): the bulk's Kolmogorov distance in every draw below 0.03, and the
    two outliers (the features' mean, the weights' spike; divided by d) and the spike's overlap
    with the target: each mean within the Student quantile of 7 degrees of freedom at a
    two-sided 1e-3 times its s.e., plus the finite-d bias measured as c/d against the
    prediction at the simulated d (validation/reports/BIAS_SLOPES.md: (|c| + 3 s.e.)/600; it
    was 5%, 2% and 0.03, unmeasured)."""
    from scipy import stats

    from validation.experiments import bias_slopes as BS

    sp = asymptotics.srf_mapping("tanh", "tanh", alpha0=2.0, eta=2.0)
    d = 600
    kw = dict(alpha=2.0, beta=0.5, alpha0=2.0, eta=2.0, d=d)
    lf = asymptotics.spectrum("features", model="srf", **kw)
    lw = asymptotics.spectrum("weights", **kw)
    assert [o.channel for o in lf.outliers] == ["mean"]
    assert [o.channel for o in lw.outliers] == ["learned 1"]
    rows, ks = [], []
    for seed in range(8):
        D = simulate_srf(sigma="tanh", r=sp.r, c=sp.c, gamma=sp.gamma, d=d, beta=0.5,
                         alpha=2.0, seed=seed)
        ks += [kolmogorov(D.f_eig, lf.cdf, 1), kolmogorov(D.w_eig, lw.cdf, 1)]
        rows.append((D.f_eig[-1] / d, D.w_eig[-1] / d, D.w_overlaps["target 1"][0]))
    assert max(ks) < 0.03
    rows = np.array(rows)
    pred = (lf.outliers[0].location / d, lw.outliers[0].location / d,
            lw.outliers[0].overlaps["target 1"])
    t = stats.t.ppf(1 - 5e-4, len(rows) - 1)
    for j, q in enumerate(("features_mean_outlier/d", "weights_outlier/d",
                           "weights_outlier_target_overlap")):
        x = rows[:, j]
        band = t * x.std(ddof=1) / math.sqrt(x.size) + BS.slope("srf-outliers-tanh",
                                                                q).allowance(d)
        assert abs(x.mean() - pred[j]) <= band, (q, x.mean(), pred[j], band)


def test_limit_outliers_diverge() -> None:
    law = asymptotics.spectrum("features", alpha=2.0, beta=0.5, eta=2.0)
    assert law.outliers[0].location == math.inf and law.outliers[0].channel == "mean"
    assert law.d is None and law.params["alpha"] == 2.0


@pytest.mark.parametrize("kw,msg", [
    (dict(of="spectra", alpha=1.0), "of must be one of"),
    (dict(of="features"), "alpha must be given"),
    (dict(of="weights", eta=1.0, model="rf"), "eta must be 0 for model='rf'"),
    (dict(of="weights", steps=2, target="tanh(z1)", model="rf", eta=0.0),
     "model must be 'srf' or 'network' for of='weights' with steps > 1"),
    (dict(of="features", alpha=1.0, exponents=(0.1, 0.2), d=1000),
     r"exponents=\(a1, a2\) covers of='weights'"),
    (dict(of="features", alpha=-1.0), "alpha must be"),
])
def test_bad_input(kw: dict, msg: str) -> None:
    with pytest.raises(ValueError, match=msg):
        asymptotics.spectrum(**kw)


@pytest.mark.slow
@pytest.mark.parametrize("sigma,alpha0,eta", [("tanh", 0.5, 2.0), ("relu", 1.0, 1.0)])
def test_network_weights_bulk_against_monte_carlo(sigma: str, alpha0: float, eta: float) -> None:
    """The trained network's first layer at small batches (d = 800, eight draws): in every draw
    the population covariance's generalised MP law fits the bulk (KS <= 0.02) where the sRF's
    scaled MP law does not (measured KS 0.025-0.045 at d = 800-1000). The eigenvalues' KS
    distance is no i.i.d. KS statistic (no quantile of it to state), so each draw is checked;
    it was two draws."""
    from validation.experiments.spectra_sim import simulate_network

    kw = dict(sigma=sigma, target=sigma, alpha0=alpha0, eta=eta, beta=1.0 if sigma == "tanh"
              else 0.5, d=800)
    net = asymptotics.spectrum("weights", model="network", **kw)
    srf = asymptotics.spectrum("weights", model="srf", **kw)
    for seed in range(8):
        D = simulate_network(sigma=sigma, target=sigma, d=800, beta=kw["beta"], alpha=1.0,
                             alpha0=alpha0, eta=eta, seed=seed)
        assert kolmogorov(D.w_eig, net.cdf, 1) <= 0.02
        assert kolmogorov(D.w_eig, srf.cdf, 1) > 0.02


def test_network_features_default_and_small_step() -> None:
    """The network's features law is the default at one step and after several; as eta -> 0
    its population covariance tends to c I (spread O(eta)), so its Stieltjes transform must
    tend to the sRF surrogate's closed K-group MP form (a different route: the composite
    generalised-MP equation with the exact population resolvent), and its Gauss-rule path must
    agree with the exact polish."""
    kw = dict(alpha=2.0, beta=0.5, alpha0=1.0, sigma="relu", target="relu")
    assert asymptotics.spectrum("features", eta=1.0, **kw).model == "network"
    assert asymptotics.spectrum("features", eta=1.0, steps=2, target="relu(z1)",
                                **{k: v for k, v in kw.items() if k != "target"}
                                ).model == "network"  # beyond one step too (§16.8)
    net = asymptotics.spectrum("features", eta=1e-3, model="network", d=1000, **kw)
    srf = asymptotics.spectrum("features", eta=1e-3, model="srf", d=1000, **kw)
    z = np.array([0.3 + 0.2j, 1.5 + 0.01j, 3.0 + 0.5j])
    np.testing.assert_allclose(net.stieltjes(z), srf.stieltjes(z), rtol=1e-5)
    # the network's channels (B v form, bulk-variance shift) tend to the sRF ones too
    (on,), (os_,) = net.outliers, srf.outliers
    assert on.location == pytest.approx(os_.location, rel=1e-4)
    assert on.overlaps["mean"] == pytest.approx(os_.overlaps["mean"], abs=1e-5)
    assert on.overlaps["learned 1 (B v)"] == pytest.approx(os_.overlaps["learned 1"], rel=1e-2)
    sol = asymptotics.spectrum("features", eta=1.0, model="network", **kw)._solver
    np.testing.assert_allclose(sol.m(z), sol.approx.m(z), rtol=1e-3)
    assert net.mass == pytest.approx(1.0, abs=2e-3)


@pytest.mark.slow
def test_network_features_against_monte_carlo() -> None:
    """The relu network's features after one step (d = 800, eight draws): in every draw the
    network's law fits the bulk (KS <= 0.02, the validation's target; checked per draw, the
    eigenvalues' KS distance being no i.i.d. KS statistic) and closer than the sRF surrogate's
    (the surrogate: KS 0.023-0.035 at d = 800-2000, its bulk ends at 5.26 where the draws reach
    5.9-6.3); the mean outlier's squared overlap with 1_p/sqrt(p) (sRF 0.998 at d = 800) at
    the network theory's at d = 800 within the Student quantile of eight draws (two-sided
    1e-3) times its s.e., plus the residual finite-d bias measured as c/d
    (validation/reports/BIAS_SLOPES.md, network-features-relu: (|c| + 3 s.e.)/800; it was
    two draws, the overlap within a fixed 5e-4)."""
    from validation.experiments.spectra_sim import simulate_network

    kw = dict(sigma="relu", target="relu", alpha=2.0, alpha0=1.0, eta=1.0, beta=0.5, d=800)
    net = asymptotics.spectrum("features", model="network", **kw)
    srf = asymptotics.spectrum("features", model="srf", **kw)
    ov = []
    for seed in range(8):
        D = simulate_network(seed=seed, **kw)
        ks_net = kolmogorov(D.f_eig, net.cdf, 1)
        assert ks_net <= 0.02
        assert kolmogorov(D.f_eig, srf.cdf, 1) > ks_net
        ov.append(D.f_overlaps["mean"][0])
    from scipy import stats

    from validation.experiments import bias_slopes as BS

    ov = np.array(ov)
    band = (stats.t.ppf(1 - 5e-4, ov.size - 1) * ov.std(ddof=1) / np.sqrt(ov.size)
            + BS.slope("network-features-relu", "features_mean_overlap").allowance(800))
    assert abs(ov.mean() - net.outliers[0].overlaps["mean"]) <= band, (ov.mean(), band)


def test_two_opposite_groups_equal_one_group() -> None:
    """Odd sigma, groups +u and -u (each half of the neurons, same bulk) are one group up to the
    signs of the columns of F, which leave the eigenvalues of F^T F unchanged: the K = 2 law and
    its outliers must equal the K = 1 law's (an exact identity, not a tolerance of the theory)."""
    from asymptotics.spectra.features import features_bulk, features_outliers
    from asymptotics.spiked.problem import build_spiked_problem

    common = dict(sigma="tanh", target="tanh", overlaps=[[0.8]], lam=0.01, beta=0.5)
    one = build_spiked_problem(loadings=[[1.1]], bulk=[1.2], fractions=[1.0], **common)
    two = build_spiked_problem(loadings=[[1.1], [-1.1]], bulk=[1.2, 1.2], fractions=[0.5, 0.5],
                               **common)
    (s1, sup1, _), (s2, sup2, _) = features_bulk(one, 2.0), features_bulk(two, 2.0)
    x = np.linspace(sup1[0][0], sup1[-1][1], 7)[1:-1]
    np.testing.assert_allclose(s2.m(x + 1e-3j), s1.m(x + 1e-3j), rtol=1e-9)
    assert sup2[-1][1] == pytest.approx(sup1[-1][1], rel=1e-4)
    o1 = features_outliers(one, 2.0, s1, sup1[-1][1], 1000)
    o2 = features_outliers(two, 2.0, s2, sup2[-1][1], 1000)
    assert [o.location for o in o2] == pytest.approx([o.location for o in o1], rel=1e-6)


def test_committed_report_is_its_data() -> None:
    """validation/reports/SPECTRA_THEORY.md is what ``--report-only`` writes from the CSV."""
    import pandas as pd

    from validation.experiments.spectra_theory import CSV, REPORT, report

    assert REPORT.read_text() == report(pd.read_csv(CSV).to_dict("records")) + "\n"


def test_a_store_not_sqlite_is_refused(tmp_path, monkeypatch, capsys) -> None:
    """``--store runs.csv``: one line naming the option and the value, exit 2, nothing run."""
    from validation.experiments import spectra_theory as ST

    monkeypatch.chdir(tmp_path)
    assert ST.main(["--store", "runs.csv", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --store") and "runs.csv" in err and len(err.splitlines()) == 1
    assert not list(tmp_path.iterdir())


def test_the_export_is_in_the_settings_order() -> None:
    """The committed CSV lists the cells in SETTINGS order, then d (the campaign's rank)."""
    import pandas as pd

    from validation.experiments.spectra_theory import CSV, SETTINGS, campaign

    cells = pd.read_csv(CSV)[["setting", "d"]].drop_duplicates()
    names = [s.name for s in SETTINGS]
    got = [(names.index(n), d) for n, d in cells.itertuples(index=False)]
    assert got == sorted(got) and len(got) == len(campaign(large=True).settings)


def test_steps_store_not_sqlite_is_refused(tmp_path, monkeypatch, capsys) -> None:
    """The weights-after-several-steps command: ``--store runs.csv`` is one line, exit 2."""
    from validation.experiments.spectra_weights import steps as SW

    monkeypatch.chdir(tmp_path)
    assert SW.main(["--store", "runs.csv", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --store") and "runs.csv" in err and len(err.splitlines()) == 1
    assert not list(tmp_path.iterdir())


def test_steps_export_is_the_committed_csv(tmp_path) -> None:
    """The committed weights-after-several-steps CSV is its campaign's export: every cell of the
    plan, in the settings' order then d, the same bytes and keys when exported again."""
    import json

    from validation.campaign import Store
    from validation.campaign.store import keys_path
    from validation.experiments.spectra_weights import steps as SW

    c = SW.campaign()
    out = tmp_path / "steps.csv"
    with Store(None) as st:
        st.import_csv(c, SW.CSV)
        assert st.done(c) == set(c.plan_hashes())
        st.export_csv(c, out)
    assert out.read_bytes() == SW.CSV.read_bytes()
    assert keys_path(out).read_text() == keys_path(SW.CSV).read_text()
    names = [s.name for s in SW.SETTINGS]
    places = [json.loads(ln.split(" ", 1)[1]) for ln in keys_path(out).read_text().splitlines()[1:]]
    cells = [(names.index(name), d) for name, d in places]
    assert cells == sorted(cells) and len(cells) == len(c.settings)


def test_population_direction_is_the_mean_row_over_many_neurons() -> None:
    """The weights' simulated learned direction after one step (docs/THEORY.md §16.3): the
    Gauss-Hermite population mean row given the batch equals the mean update of 200000
    independent sphere rows on that batch (Monte Carlo, relative error ~0.3%)."""
    from asymptotics.coefficients.functions import get_function
    from validation.experiments.spectra_sim import population_direction, sphere

    rng = np.random.default_rng(1)
    d, n0, eta = 100, 60, 2.0
    dsig = get_function("tanh").derivative
    X0, e = rng.standard_normal((n0, d)), rng.standard_normal(n0)
    v_pop = population_direction(dsig, X0, e, eta)
    acc = np.zeros(d)
    for _ in range(10):
        W = sphere(rng, 20000, d)
        acc += (eta / n0) * ((dsig(X0 @ W.T) * e[:, None]).T @ X0).sum(axis=0)
    mc = acc / 200000
    assert np.linalg.norm(mc - v_pop) <= 0.01 * np.linalg.norm(v_pop)
