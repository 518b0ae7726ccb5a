"""The row-variance check's draws go through the campaign store (one task per draw, keyed by
its full record; validation/experiments/spectra_weights/rowvar.py) and its tables are derived
from the store's export: a run stopped part-way resumes and derives the same table as one run
in one go, which is the mean and s.e. of the draws computed directly; the committed tables are
those derived from the committed draws (docs/DERIVATIONS.md §10.5, THEORY.md §16.9)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from validation.campaign import Store, run_campaign
from validation.campaign.store import keys_path, read_keys
from validation.experiments.spectra_weights import rowvar as R

TINY = {40: 3}


def _no_theory(_) -> dict:
    return dict(sig_vv_theory=math.nan, sig_vv_route=math.nan, lam_theory=math.nan)


def test_a_stopped_run_resumes_to_the_direct_means(tmp_path):
    """Half the tiny plan, then the whole: only the rest runs, and the table derived from the
    export is the mean and s.e. of :func:`measure` called directly on the seeds."""
    settings = (R.SETTINGS[0], R.SETTINGS[3])  # 2 steps constant, 3 steps pm1
    c = R.draw_campaign(settings, TINY)
    assert len(c.settings) == 6 and len(set(c.plan_hashes().values())) == 6
    db, csv = tmp_path / "s.sqlite", tmp_path / "draws.csv"
    with Store(db) as st:
        assert run_campaign(c.with_settings(c.settings[:2]), st, progress=False).ran == 2
    with Store(db) as st:
        out = run_campaign(c, st, progress=False)
        assert (out.skipped, out.ran) == (2, 4)
        assert st.export_csv(c, csv) == 6
    assert read_keys(keys_path(csv)) == c.plan_hashes()
    table = R.check_table(pd.read_csv(csv), c, _no_theory)
    R.write_table(table, tmp_path / "check.csv")
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    for s, row in zip(settings, table.itertuples(), strict=True):
        direct = [R.measure(s, 40, R.SEED0 + i) for i in range(3)]
        assert (row.setting, row.d, row.draws, row.seed0) == (s.name, 40, 3, R.SEED0)
        for q in R.QUANTITIES:
            x = np.array([dr[q] for dr in direct])
            assert getattr(row, q) == x.mean()  # exact cells: the export is the run
            assert getattr(row, f"{q}_se") == x.std(ddof=1) / math.sqrt(3)
    with pytest.raises(ValueError, match=r"draws \[7002\] are not stored"):
        R.check_table(pd.read_csv(csv).iloc[:-1], c, _no_theory)


def test_batch_draws_resume_and_derive(tmp_path):
    c = R.batch_campaign(((2.0, 2), (20.0, 2)), d=30, p=40)
    with Store(tmp_path / "b.sqlite") as st:
        run_campaign(c.with_settings(c.settings[:1]), st, progress=False)
        assert run_campaign(c, st, progress=False).ran == 3
        df = st.frame(c)
    t = R.batch_table(df, c, lambda a: dict(lam_theory=0.0, sig_vv_theory=0.0,
                                            sig_vv_route=0.0))
    assert list(t.alpha0) == [2.0, 20.0] and list(t.draws) == [2, 2]
    x = np.array([R.batch_draw(30, 40, 20.0, R.BATCH_SEED0 + i) for i in range(2)])
    assert t.lam.iloc[1] == x[:, 0].mean() and t.sig_vv.iloc[1] == x[:, 1].mean()


def test_a_changed_protocol_reruns_the_draws():
    c = R.draw_campaign(R.SETTINGS[:1], TINY)
    from dataclasses import replace

    other = R.draw_campaign((replace(R.SETTINGS[0], eta=2.0),), TINY)
    assert set(c.plan_hashes()) == set(other.plan_hashes())  # same places
    assert not set(c.plan_hashes().values()) & set(other.plan_hashes().values())
    assert replace(c, version="2").task_hash(c.settings[0]) != c.task_hash(c.settings[0])


@pytest.mark.parametrize("which", ["check", "batch"])
def test_committed_tables_are_derived_from_the_committed_draws(which):
    """The committed draws carry the current plan's keys, and the committed table is the one
    derived from them (the simulated columns to the written precision; the theory's columns
    recomputed)."""
    c, draws, table, fn, theory = (
        (R.draw_campaign(), R.DRAWS_CSV, R.CSV, R.check_table, R.setting_theory)
        if which == "check" else
        (R.batch_campaign(), R.BATCH_DRAWS_CSV, R.BATCH_CSV, R.batch_table, R.batch_theory))
    if not draws.exists():
        pytest.skip(f"{draws.name} not committed")
    assert read_keys(keys_path(draws)) == c.plan_hashes()
    derived = fn(pd.read_csv(draws), c, theory)
    committed = pd.read_csv(table)
    assert list(derived.columns) == list(committed.columns)
    for col in derived.columns:
        if not pd.api.types.is_numeric_dtype(derived[col]):
            assert list(derived[col]) == list(committed[col]), col
        else:
            np.testing.assert_allclose(derived[col], committed[col], rtol=1e-9, atol=0,
                                       err_msg=col)


def test_store_under_a_csv_name_is_refused(capsys):
    assert R.main(["--store", "draws.csv"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --store") and len(err.splitlines()) == 1
