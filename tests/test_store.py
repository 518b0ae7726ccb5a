"""The committed validation store is reproducible by the current simulator.

``validation/data/matrix_runs.csv`` is what REPORT.md is computed from; a change to the simulator
that moves its numbers (a new random stream, a different chunk order, a wrong kernel) must show
up here rather than silently leave the report describing code that no longer exists.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from validation.matrix.campaign import MatrixSetting, _task, read_store
from validation.protocol.kernels import KERNELS, tanh_features, tanh_step_residual

STORE = Path(__file__).resolve().parents[1] / "validation" / "data" / "matrix_runs.csv"

# the cheapest stored repetitions (d = 1000) of each model, with tanh (the fused kernels) and
# relu / erf (the numpy path) as activations
CASES = [
    ("tanh", "tanh", 0.5, 0.5, 1.0, "network", 4),
    ("tanh", "he2", 0.5, 0.5, 3.0, "srf", 1),
    ("relu", "sin", 0.5, 0.5, 3.0, "network", 6),
    ("erf", "relu", 0.5, 2.0, 0.0, "rf", 4),
]
# a repetition of the precision rounds: control-variate test error
# (validation.protocol.estimators), d = 2000
CASES_CV = [("relu", "sin", 0.5, 0.5, 3.0, "srf", 16, 2000)]


@pytest.mark.parametrize("sigma,target,beta,alpha0,eta,model,rep,d",
                         [(*c, 1000) for c in CASES] + CASES_CV)
def test_stored_repetition_is_reproduced(sigma, target, beta, alpha0, eta, model, rep, d):
    store = read_store(STORE)
    ms = MatrixSetting(sigma, target, beta=beta, alpha0=alpha0, eta=eta)
    stored = store[(store["key"] == ms.key) & (store["model"] == model) & (store["d"] == d)
                   & (store["rep"] == rep)].sort_values(["alpha", "lam"])
    assert len(stored) == 8, f"store lacks {ms.key} {model} rep {rep}"
    estimator = stored["estimator"].iloc[0]
    rows = sorted(_task(ms, model, d, rep, estimator), key=lambda r: (r["alpha"], r["lam"]))
    again = np.array([r["risk"] for r in rows])
    np.testing.assert_allclose(again, stored["risk"].to_numpy(), rtol=1e-10, atol=0)


def test_tanh_kernels_match_numpy():
    rng = np.random.default_rng(3)
    z = np.concatenate([rng.standard_normal(3000) * 3, np.linspace(-40, 40, 2001),
                        [0.0, -0.0, 1e-300, -1e-300, np.inf, -np.inf]])
    Z = z.reshape(1, -1).copy()
    tanh_features(Z, 1.0)
    assert np.max(np.abs(Z[0] - np.tanh(z))) <= 4e-16
    Z = rng.standard_normal((7, 50)) * 2
    y = rng.standard_normal(7)
    t = np.tanh(Z)
    expected = (y - t.mean(axis=1))[:, None] * (1 - t * t)
    tanh_step_residual(Z, y)
    np.testing.assert_allclose(Z, expected, rtol=0, atol=1e-14)
    assert np.tanh in KERNELS


def test_repetitions_needed_for_pooled_estimators():
    from validation.matrix.campaign import _needed

    # one estimator: n = (sd / target)^2
    assert _needed(0.01, 16, 0.01, 2e-3, 10_000) == 25
    # new repetitions without noise: n_old sd^2 / n^2 <= t^2, n >= sqrt(16) * 0.01 / 2e-3 = 20
    assert _needed(0.01, 16, 0.0, 2e-3, 10_000) == 20
    # no old repetitions (a store of one estimator)
    assert _needed(0.0, 0, 0.01, 2e-3, 10_000) == 25
    # already below the target, and the cap
    assert _needed(0.004, 16, 0.004, 2e-3, 10_000) == 16
    assert _needed(0.1, 16, 0.1, 2e-3, 100) == 100


def test_plan_pilots_a_new_estimator_then_sizes_it():
    import pandas as pd

    from validation.matrix.campaign import ESTIMATOR, PILOT, plan

    ms = MatrixSetting("tanh", "tanh", beta=1.0, alpha0=2.0, eta=1.0)
    rng = np.random.default_rng(0)

    def rows(reps, estimator, sd):
        return [dict(key=ms.key, model="srf", d=2000, rep=r, alpha=1.0, lam=0.1,
                     risk=0.3 + sd * rng.standard_normal(), estimator=estimator) for r in reps]

    store = pd.DataFrame(rows(range(16), "mc", 0.02))
    todo = plan(store, 2e-3, 8, 1000, [(ms, "srf", 2000)])
    assert [t[3] for t in todo] == list(range(16, 16 + PILOT))  # a pilot first
    store = pd.DataFrame(rows(range(16), "mc", 0.02) + rows(range(16, 16 + PILOT), ESTIMATOR, 0.01))
    todo = plan(store, 2e-3, 8, 1000, [(ms, "srf", 2000)])
    assert len(todo) > 0 and todo[0][3] == 16 + PILOT
