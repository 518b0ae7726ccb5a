"""compare()'s numbers checked independently: its theory column against the closed-form
random-features ridge risk (asymptotics/models/rf_ridge.py, a separate deterministic-equivalent
computation, not the solver), its simulation columns against the per-seed values of a separate
``simulate`` call summarised here with numpy, and z / rel_gap recomputed by hand."""

from __future__ import annotations

import math

import numpy as np

from asymptotics.models.rf_ridge import rf_ridge_risk
from validation.compare import compare
from validation.protocol.simulator import Setting, simulate


def test_compare_rf_columns_against_independent_numbers():
    kw = dict(sigma="tanh", target="tanh", alpha0=2.0, eta=1.0, lam=0.1, beta=1.0)
    alphas = [0.5, 2.0]
    df = compare("rf", alphas, d=150, seeds=3, seed=5, estimator="mc", progress=False, **kw)
    for row, a in zip(df.itertuples(), alphas, strict=True):
        closed = rf_ridge_risk(a, sigma="tanh", target="tanh", lam=0.1, beta=1.0)
        assert math.isclose(row.theory, closed, rel_tol=1e-6), (row.theory, closed)
        s = Setting(model="rf", alpha=a, d=150, estimator="mc",
                    **{**kw, "eta": 0.0})
        values = np.asarray(simulate(s, seeds=3, seed=5).values)
        mean, se = values.mean(), values.std(ddof=1) / math.sqrt(values.size)
        assert math.isclose(row.sim_mean, mean, rel_tol=1e-12)
        assert math.isclose(row.sim_se, se, rel_tol=1e-9)
        assert math.isclose(row.z, (mean - row.theory) / se, rel_tol=1e-9)
        assert math.isclose(row.rel_gap, (mean - row.theory) / row.theory, rel_tol=1e-9)
