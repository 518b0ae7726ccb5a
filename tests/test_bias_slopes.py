"""The measured finite-d bias slopes (validation/experiments/bias_slopes): the committed runs are
the campaign's (keys of the current plan, one task re-run exactly), the fit recovers a known
slope, and the committed report is regenerated from the committed runs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from validation.campaign import Store
from validation.campaign.store import keys_path, read_keys
from validation.experiments import bias_slopes as BS


def test_committed_runs_are_the_current_plan():
    c = BS.campaign()
    keys = read_keys(keys_path(BS.RUNS))
    with Store(None) as st:
        st.import_csv(c, BS.RUNS)
        places = set(st.hashes(c))
    assert set(keys) == places == set(c.plan_hashes())
    plan = c.plan_hashes()
    assert all(plan[p] == keys[p] for p in places)


def test_a_committed_task_is_rerun_exactly():
    df = BS.load_runs()
    for name in ("relu-relu-0.5-3", "finite-width-2groups"):
        got = BS.draw(BS.BY_NAME[name], 200, 3)
        rows = df[(df["setting"] == name) & (df["d"] == 200) & (df["rep"] == 3)]
        assert len(rows) == len(got)
        for r in rows.itertuples():
            assert r.value == pytest.approx(got[r.quantity], rel=1e-9, abs=1e-12)


def test_fit_recovers_a_known_slope(monkeypatch):
    """mean(d) = limit + c/d with Gaussian noise of known s.e.: c within 4 s.e. of the truth,
    chi2 of order dof, the intercept at the limit."""
    rng = np.random.default_rng(0)
    st = BS.BY_NAME["relu-relu-0.5-3"]
    monkeypatch.setattr(BS, "limits", lambda s, d=None: {"c": 1.0})
    rows = [dict(setting=st.name, d=d, rep=i, quantity="c",
                 value=1.0 + 7.0 / d + 0.01 * rng.standard_normal())
            for d in (200, 400, 800) for i in range(400)]
    (s,) = BS.fit_slopes(pd.DataFrame(rows))
    assert abs(s.c - 7.0) < 4 * s.se and s.se < 0.5
    assert s.chi2 < 12 and abs(s.z_limit) < 4
    assert s.allowance(400) == pytest.approx((abs(s.c) + 3 * s.se) / 400)


@pytest.mark.slow  # ~30-60 s: the limits of every setting (population rules, resolvents)
def test_committed_report_is_regenerated():
    from validation.experiments.bias_slopes.report import markdown

    text = markdown(BS.load_runs())
    assert text == (BS.REPORTS / "BIAS_SLOPES.md").read_text()
