"""The readout-group statistics and the several-size ridge of validation.multistep.simulator
(validation.multistep.groups), and the quick multistep_risk campaign."""

import math

import numpy as np
import pytest

from validation.multistep.groups import group_columns, group_statistics, readout_groups
from validation.multistep.simulator import MultiStepConfig, readout_vector, run_once


def test_group_statistics_by_hand():
    W = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 2.0]])
    theta = np.array([[1.0, 0.0, 0.0]])
    a = readout_vector(3, "hypercube")  # + + -
    s = group_statistics(W, theta, a)
    np.testing.assert_array_equal(s.n, [2, 1])
    np.testing.assert_allclose(s.a, [[0.5], [0.0]])
    # group 0: mean (1/2, 1/2, 0), each row at distance^2 1/2; group 1: one row, no spread
    np.testing.assert_allclose(s.c, [0.5, 0.0])
    np.testing.assert_allclose(s.B, [[0.5 - 0.25, 0.0], [0.0, 4.0]])
    np.testing.assert_allclose(s.Bperp, [[0.25 - 0.25, 0.0], [0.0, 4.0]])
    flat = s.flat()
    assert tuple(flat) == group_columns()
    assert flat["a_g0_j1"] == 0.5 and math.isnan(flat["a_g0_j2"]) and flat["B_11"] == 4.0
    one = group_statistics(W, theta, readout_vector(3, "constant")).flat()
    assert one["n_g0"] == 3 and math.isnan(one["n_g1"]) and math.isnan(one["B_01"])
    with pytest.raises(ValueError, match="zero"):
        readout_groups(np.array([1.0, 0.0]))


def test_group_statistics_at_initialisation_and_symmetry():
    d = 400
    c = MultiStepConfig(d=d, target="z1 + z1*z2 + z1*z2*z3", steps=1, alpha0=2.0, eta=2.0,
                        groups=True)
    run = run_once(c, np.random.SeedSequence(3))
    s0, s1 = run.groups
    np.testing.assert_array_equal(s0.n, [200, 200])
    assert np.all(np.abs(s0.a) < 5 / math.sqrt(d))  # O(1/sqrt d) (in fact ~ 1/sqrt(d n_g))
    np.testing.assert_allclose(s0.c, 1.0, atol=0.02)  # unit rows, mean ~ 0
    assert np.all(np.abs(s0.B) < 0.02) and np.all(np.abs(s0.Bperp) < 0.02)
    for s in (s0, s1):
        np.testing.assert_allclose(s.B, s.B.T, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(s.Bperp, s.Bperp.T, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(s.B - s.Bperp, s.a @ s.a.T, rtol=1e-10, atol=1e-14)
    # after one step the groups move apart along theta_1 (opposite readout signs)
    assert s1.a[0, 0] * s1.a[1, 0] < 0 and abs(s1.a[0, 0]) > 10 / math.sqrt(d)


@pytest.mark.parametrize("readout", ["hypercube", "constant"])
def test_several_ridge_sizes_equal_the_single_size_path(readout):
    base = dict(d=48, target="z1 + z1*z2", steps=2, alpha0=8.0, eta=(2.0, 8.0), readout=readout,
                lam=0.01, n_test=600)
    many = run_once(MultiStepConfig(ridge_alphas=(0.5, 2.0, 4.0), **base),
                    np.random.SeedSequence(9))
    assert many.test_errors.shape == (3, 3)
    for j, alpha in enumerate((0.5, 2.0, 4.0)):
        one = run_once(MultiStepConfig(ridge_alpha=alpha, **base), np.random.SeedSequence(9))
        np.testing.assert_array_equal(one.overlaps, many.overlaps)
        np.testing.assert_allclose(many.test_errors[:, j], one.test_error, rtol=1e-9)
        assert one.target_power == pytest.approx(many.target_power, rel=1e-12)
    np.testing.assert_array_equal(many.test_error, many.test_errors[:, 0])


def test_config_keeps_old_records_and_checks_ridge_sizes():
    old = MultiStepConfig(d=32, ridge_alpha=2.0)
    assert "ridge_alphas" not in old.record() and "groups" not in old.record()
    assert old.ridge_levels == (2.0,) and MultiStepConfig(d=32).ridge_levels == ()
    new = MultiStepConfig(d=32, ridge_alphas=(0.5, 2), groups=True)
    assert new.record()["ridge_alphas"] == "0.5,2" and new.ridge_levels == (0.5, 2.0)
    with pytest.raises(ValueError, match="not both"):
        MultiStepConfig(d=32, ridge_alpha=1.0, ridge_alphas=(2.0,))
    with pytest.raises(ValueError, match="ridge_alphas"):
        MultiStepConfig(d=32, ridge_alphas=(0.0,))


def test_quick_campaign_runs_and_reads_back(tmp_path, monkeypatch, capsys):
    from validation.multistep import risk as MR

    monkeypatch.setattr(MR, "REPORTS", tmp_path / "reports")  # not a checkout: the cache
    monkeypatch.setenv("GIANTSTEP_CACHE", str(tmp_path / "cache"))
    assert MR.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "timing one repetition" in out and "rep 1:" in out
    path = tmp_path / "cache" / "reports" / "data" / "multistep_risk_quick.csv"
    assert MR.paths(MR.QUICK)[0] == path
    import pandas as pd

    df = pd.read_csv(path)
    tasks = sum(seeds * len(order) for _, seeds, order in MR.QUICK.blocks)
    assert len(df) == tasks * (MR.STEPS + 1) * len(MR.RIDGE_ALPHAS)
    assert set(df["setting"]) == set("ABCDEF") and set(df["ridge_alpha"]) == {0.5, 2.0, 4.0}
    assert df["test_error"].notna().all() and (df["test_error"] > 0).all()
    d = df[df["setting"] == "D"]
    assert d["n_g1"].isna().all() and d["B_01"].isna().all() and d["c_g0"].notna().all()
    b = df[df["setting"] == "B"]
    assert b["a_g0_j3"].notna().all() and df[df["setting"] == "A"]["a_g0_j3"].isna().all()
    np.testing.assert_allclose(df["B_00"] - df["Bperp_00"],
                               df["a_g0_j1"] ** 2 + df["a_g0_j2"] ** 2
                               + df["a_g0_j3"].fillna(0.0) ** 2, rtol=1e-6, atol=1e-9)
    # the group statistics are those of W_t: the same in the rows of a step
    assert (df.groupby(["setting", "d", "repetition", "step"])["c_g0"].nunique() == 1).all()
    assert MR.main(["--quick"]) == 0  # everything stored: nothing runs
    assert f"{tasks} of {tasks} repetitions stored, 0 to run" in capsys.readouterr().out
    assert MR.main(["--quick", "--summary"]) == 0
    table = capsys.readouterr().out
    assert "alpha_r=0.5" in table and "±" in table
