"""The matrix aggregate compares each simulated model with the theory of the same model, and the
relu/he2 trend of validation/REPORT.md fits the rate it claims."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from asymptotics import risk
from validation.matrix.campaign import ALPHAS, aggregate
from validation.matrix.report import HE2_TREND, he2_trend


def _store(model: str, d: int, risks: list[float]) -> pd.DataFrame:
    rows = []
    for rep, r in enumerate(risks):
        for a in ALPHAS:
            rows.append(dict(key="tanh/tanh beta=1 alpha0=2 eta=1", sigma="tanh", target="tanh",
                             beta=1.0, alpha0=2.0, eta=1.0, model=model, d=d, seed_root=1,
                             rep=rep, alpha=a, lam=0.01, risk=r, seconds=1.0, estimator="cv"))
    return pd.DataFrame(rows)


def test_each_model_is_compared_with_its_own_theory():
    store = pd.concat([_store("network", 1000, [0.2, 0.3]), _store("srf", 1000, [0.2, 0.3])])
    agg = aggregate(store)
    a = ALPHAS[-1]
    net = agg[(agg["model"] == "network") & np.isclose(agg["alpha"], a)].iloc[0]
    srf = agg[(agg["model"] == "srf") & np.isclose(agg["alpha"], a)].iloc[0]
    kw = dict(sigma="tanh", target="tanh", alpha0=2.0, eta=1.0, lam=0.01, beta=1.0)
    assert net["theory"] == pytest.approx(risk(a, model="network", p=1000.0, **kw).risk,
                                          rel=1e-12)
    assert srf["theory"] == pytest.approx(risk(a, model="srf", **kw).risk, rel=1e-12)
    # the sRF theory stands beside the network's own, with its z
    assert net["theory_srf"] == srf["theory"]
    assert net["theory"] != net["theory_srf"]
    assert net["z"] == pytest.approx((0.25 - net["theory"]) / net["sim_se"])
    assert net["z_srf"] == pytest.approx((0.25 - net["theory_srf"]) / net["sim_se"])


def test_he2_trend_recovers_a_power_law():
    """Repetitions whose gap is -2 d^-0.7 (1 +- 0.05, alternating) at every point: the per-d mean
    is exact, the s.e. is that of the repetition means, and the fit returns 0.7."""
    agg, store = [], []
    for d in (1000, 2000, 4000, 8000):
        gap = -2.0 * d ** -0.7
        for a in (1.0, 5.0):
            agg.append(dict(key=HE2_TREND, model="network", d=d, alpha=a, lam=0.01, theory=3.0))
            for rep, f in enumerate((0.95, 1.05, 0.95, 1.05)):
                store.append(dict(key=HE2_TREND, model="network", d=d, alpha=a, lam=0.01,
                                  rep=rep, risk=3.0 * (1 + gap * f)))
    agg, store = pd.DataFrame(agg), pd.DataFrame(store)
    tab, rate = he2_trend(agg, store)
    assert list(tab["d"]) == [1000, 2000, 4000, 8000]
    assert list(tab["seeds"]) == [4, 4, 4, 4]
    g = 2.0 * 1000 ** -0.7
    assert tab["mean_rel_gap"].iloc[0] == pytest.approx(-g, rel=1e-12)
    assert tab["se"].iloc[0] == pytest.approx(np.std([0.95 * g, 1.05 * g] * 2, ddof=1) / 2,
                                              rel=1e-12)
    assert rate == pytest.approx(0.7, abs=1e-10)
    # one repetition at a d: no s.e. there, and that d stays out of the fit
    one = store[(store["d"] != 8000) | (store["rep"] == 0)]
    tab1, rate1 = he2_trend(agg, one)
    assert tab1["seeds"].iloc[-1] == 1 and math.isnan(tab1["se"].iloc[-1])
    assert rate1 == pytest.approx(0.7, abs=1e-10)
    # a gap that does not keep one sign has no rate
    flip = store.assign(risk=np.where(store["d"] > 3000, 3.03, 2.97))
    assert he2_trend(agg, flip)[1] is None
