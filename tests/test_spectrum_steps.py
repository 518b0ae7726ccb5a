"""The weights after several steps / with a finite-support readout and the two-step
eta ~ p^(1/2 + a) weights at the user's d (docs/THEORY.md §16.6-16.7) against independent
forms: the one-step sRF path of §16.3 (a separate code path), the Marchenko-Pastur edge, the
rectangular BBP closed form of a rank-one spike (Benaych-Georges and Nadakuditi 2012), and a
small Monte Carlo of the row-variance model with a low-rank perturbation."""

from __future__ import annotations

import math

import numpy as np
import pytest

import asymptotics
from asymptotics.spectra.twostep import two_step_weights
from asymptotics.spectra.weights import (
    lowrank_outliers,
    rowvar_bulk,
    rowvar_top,
    steps_weights,
)
from validation.experiments.spectra_sim import kolmogorov


def test_one_step_groups_equal_the_srf_path() -> None:
    """steps=1, constant readout through the groups (row-variance law, low-rank BBP) equals the
    one-step sRF law of §16.3 (scaled MP, rank-one spike with gamma)."""
    from asymptotics.coefficients.functions import get_function

    kw = dict(sigma="tanh", alpha0=2.0, eta=1.0, beta=0.5, d=1000)
    ref = asymptotics.spectrum("weights", target="linear", **kw)
    sol, sup, atom, outs, _ = steps_weights(get_function("tanh"), "z1", alpha0=2.0, eta=1.0,
                                            delta=0.0, beta=0.5, readout="constant", steps=1,
                                            d=1000)
    assert abs(sup[-1][1] - ref.edge) < 1e-5 * ref.edge
    (o,), (r,) = outs, ref.outliers
    assert abs(o.location - r.location) < 1e-8 * r.location
    for name in ("mean", "learned 1", "target 1"):
        assert abs(o.overlaps[name] - r.overlaps[name]) < 1e-7


@pytest.mark.parametrize("beta", [0.5, 2.0])
def test_row_variance_edge(beta: float) -> None:
    """One row variance c: MP edge c (1 + sqrt beta)^2; several: the real-axis edge equals the
    density's support edge."""
    e, _ = rowvar_top(np.array([1.7]), np.array([1.0]), beta)
    assert abs(e - 1.7 * (1 + math.sqrt(beta)) ** 2) < 1e-9
    c, w = np.array([0.5, 1.0, 3.0]), np.array([0.3, 0.5, 0.2])
    e, _ = rowvar_top(c, w, beta)
    _, sup, _ = rowvar_bulk(c, w, beta)
    assert abs(e - sup[-1][1]) < 1e-4 * e


def test_rank_one_spike_matches_the_closed_form() -> None:
    """W = G + theta a b^T (G p x d, entries of variance 1/d): the top singular value is
    sqrt((1 + theta^2)(beta + theta^2))/theta above theta = beta^(1/4)."""
    beta, p = 0.5, 800.0
    edge, mt = rowvar_top(np.array([1.0]), np.array([1.0]), beta)
    for theta in (1.0, 1.5, 3.0):
        left = np.array([[theta / math.sqrt(p)]])  # a = 1_p/sqrt(p) on one label
        (lam, qv, pu), = lowrank_outliers(mt, edge, p=p, c=np.ones(1), w=np.ones(1), left=left,
                                          gram=np.eye(1))
        want = (1 + theta ** 2) * (beta + theta ** 2) / theta ** 2
        assert abs(lam - want) < 1e-8 * want
        # right (R^d): 1 - (beta + theta^2)/(theta^2 (theta^2 + 1)); left (R^p, P = theta a):
        # 1 - beta (1 + theta^2)/(theta^2 (theta^2 + beta))
        t2 = theta ** 2
        assert abs(qv[0] ** 2 - (1 - (beta + t2) / (t2 * (t2 + 1)))) < 1e-6
        assert abs(pu[0] ** 2 / t2 - (1 - beta * (1 + t2) / (t2 * (t2 + beta)))) < 1e-6
    assert lowrank_outliers(mt, edge, p=p, c=np.ones(1), w=np.ones(1),
                            left=np.array([[0.8 / math.sqrt(p)]]), gram=np.eye(1)) == []


def test_row_variance_lowrank_against_monte_carlo() -> None:
    """Two row variances and a rank-two perturbation (left: functions of the row's label, right:
    orthonormal): bulk KS < 0.02 and outliers within 2% of one draw at p = 600."""
    rng = np.random.default_rng(3)
    beta, p = 0.5, 600
    d = int(p / beta)
    c, w = np.array([0.6, 1.8]), np.array([0.5, 0.5])
    L = np.array([[1.2, 0.4], [-0.5, 1.5]])  # label x r
    lab = np.repeat([0, 1], p // 2)
    G = rng.standard_normal((p, d)) / math.sqrt(d)
    Q = np.linalg.qr(rng.standard_normal((d, 2)))[0]
    W = np.sqrt(c[lab])[:, None] * G + L[lab] @ Q.T
    ev = np.sort(np.linalg.svd(W, compute_uv=False) ** 2)
    sol, sup, atom = rowvar_bulk(c, w, beta)
    edge, mt = rowvar_top(c, w, beta)
    outs = lowrank_outliers(mt, edge, p=p, c=c, w=w, left=L, gram=np.eye(2))
    assert len(outs) == 2
    for i, (lam, _, _) in enumerate(outs):
        assert abs(ev[-1 - i] - lam) < 0.02 * lam

    class Law:
        def cdf(self, x):
            from asymptotics.spectra.law import SpectralLaw

            return SpectralLaw("weights", "", "", {}, tuple(sup), atom, (), None, "", "",
                               sol).cdf(x)

    assert kolmogorov(ev, Law().cdf, 2) < 0.02


def test_two_step_leading_outlier_is_the_rank_one_bbp() -> None:
    """No second step (eta2 = 0), a huge batch (no noise), a1 = 0: W2 = W0 + theta a b^T with
    theta = eta1 E sigma' |u|, |u| = E[y z] = 1 for y = z; the count beyond it is 0."""
    from scipy.special import ndtri

    from asymptotics.coefficients.gauss_rules import gauss_hermite

    x, w = gauss_hermite(40)
    mu1 = float(w @ (1 - np.tanh(x) ** 2))
    g2 = float(np.mean(ndtri((np.arange(200) + 0.5) / 200) ** 2))  # the p readouts' |g|^2/p
    for eta1 in (2.0, 3.0):
        r = two_step_weights("tanh", "linear", a1=0.0, a2=0.1, eta1=eta1, eta2=0.0, d=400,
                             alpha0=1e8, n_gh=60)  # E sigma' to 1e-9 (24 nodes: 1e-5)
        theta = eta1 * mu1 * math.sqrt(g2)
        want = math.sqrt((1 + theta ** 2) * (0.5 + theta ** 2)) / theta
        assert abs(r.outliers[0] - want) < 1e-6 * want
        assert r.count == 0 and r.degrees[0] == 1
        assert abs(r.edge - (1 + math.sqrt(0.5))) < 1e-6


def test_committed_grid_prediction_is_reproduced() -> None:
    """Two rows of the committed validation/reports/data/spectra_grid_theory.csv are what the
    theory gives (the report's column is computed, not typed)."""
    import pandas as pd

    from validation.experiments.spectra_weights.twostep import CSV, predict

    df = pd.read_csv(CSV)
    for _, r in df[(df.d == 1000) & (df.a1 == 0.35) & (df.a2.isin([0.3, 0.4]))].iterrows():
        new = predict(int(r.d), float(r.a1), float(r.a2))
        assert new["predicted_at_d"] == r.predicted_at_d
        assert abs(new["sv2"] - r.sv2) < 1e-6 * r.sv2


@pytest.mark.parametrize("kw,msg", [
    (dict(model="rf", eta=0.0), "model must be 'srf' or 'network'"),
    (dict(exponents=(0.1, 0.2)), r"exponents=\(a1, a2\) covers .* steps=2, readout='gaussian'"),
    (dict(exponents=(0.1, 0.2), readout="gaussian", model="srf"), "model=.network. at a given d"),
    (dict(readout="gaussian", exponents=(0.1,), model=None), "exponents must be a pair"),
])
def test_several_steps_refusals(kw: dict, msg: str) -> None:
    with pytest.raises(ValueError, match=msg):
        asymptotics.spectrum("weights", steps=2, target="tanh(z1)", d=1000, **kw)


@pytest.mark.parametrize("kw,msg", [
    (dict(a1=0.5), "a1"), (dict(a2=-0.1), "a2"), (dict(d=3), "d"), (dict(alpha0=0), "alpha0"),
])
def test_two_step_bad_input(kw: dict, msg: str) -> None:
    args = dict(a1=0.2, a2=0.3, d=1000) | kw
    with pytest.raises(ValueError, match=msg):
        two_step_weights("tanh", "linear", **args)


def test_learned_span_estimators_on_a_known_spike() -> None:
    """The weights' learned-span overlap is against the population spike (docs/THEORY.md §16.6,
    DERIVATIONS.md §11): on a synthetic layer of that law with the spike known, the shadow
    estimator (independent rows, two halves) is unbiased, while the mean rows of W - W0 are
    biased by O (c - 1)/(p |s|^2) at first order (15% allowed for the next order at p = 200)."""
    import pandas as pd

    from validation.experiments.spectra_weights.estimator import SETTINGS, draw

    s = SETTINGS[1]  # three steps' c and |s|^2, rho = 0.98
    d, n = 400, 300
    df = pd.DataFrame([draw(s, d, k) for k in range(n)])
    p = round(s.beta * d)
    off = df.mean_rows - df.truth
    bias = float(df.truth.mean()) * (s.c - 1.0) / (p * s.s2)
    se = float(off.std(ddof=1)) / np.sqrt(n)
    assert abs(float(off.mean()) - bias) <= 0.15 * abs(bias) + 3 * se
    assert float(off.mean()) < -10 * se  # the former estimator is visibly biased
    sh = df.shadow - df.truth
    assert abs(float(sh.mean())) <= 3 * float(sh.std(ddof=1)) / np.sqrt(n)
