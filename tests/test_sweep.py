"""The sweep runner: exact resume after SIGKILL, the store, schedulers, fuzzing of the theory."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asymptotics import available
from validation import sweep as S

THEORY = dict(grid={"alpha": [0.3, 0.8, 1.5, 2.5, 4.0], "eta": list(np.linspace(0.0, 3.0, 16))},
              sigma="tanh", target="tanh", alpha0=2.0, lam=0.01)
N_TASKS, N_ROWS = 16, 16 * 5


def same_rows(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """Equal in every column but the timings (bit-for-bit floats)."""
    cols = [c for c in a.columns if c not in ("seconds", "cpu_seconds")]
    assert list(a.columns) == list(b.columns)
    pd.testing.assert_frame_equal(a[cols].reset_index(drop=True), b[cols].reset_index(drop=True),
                                  check_exact=True)


@pytest.fixture(scope="module")
def theory_reference() -> pd.DataFrame:
    return S.sweep("theory", n_jobs=1, progress=False, **THEORY)


def complete_tasks(path: Path) -> int:
    import sqlite3

    if not path.exists():
        return 0
    try:
        con = sqlite3.connect(path, timeout=5)
        try:
            return con.execute("SELECT count(*) FROM _tasks").fetchone()[0]
        finally:
            con.close()
    except sqlite3.OperationalError:  # not created yet
        return 0


def test_sigkill_midway_then_resume_equals_uninterrupted(tmp_path, theory_reference):
    store = tmp_path / "sweep.sqlite"
    cmd = [sys.executable, "-m", "validation", "sweep", "--kind", "theory",
           "--grid", "alpha=0.3,0.8,1.5,2.5,4", "--grid", "eta=0:3:16", "--sigma", "tanh",
           "--target", "tanh", "--alpha0", "2",
           "--lam", "0.01", "--store", str(store), "--n-jobs", "1", "--quiet"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    t_end = time.time() + 120
    while complete_tasks(store) < 3 and proc.poll() is None and time.time() < t_end:
        time.sleep(0.002)
    os.killpg(proc.pid, signal.SIGKILL)  # the whole process group, mid-write or not
    proc.wait(timeout=30)
    done = complete_tasks(store)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read().decode()[-2000:]
    assert 3 <= done < N_TASKS, f"the kill did not land mid-way ({done} of {N_TASKS} tasks)"

    resumed = S.sweep("theory", store=store, n_jobs=1, progress=False, **THEORY)
    same_rows(resumed, theory_reference)
    stored = S.read_store(store, "theory")
    assert len(stored) == N_ROWS and stored["key"].is_unique
    assert set(stored["key"]) == set(theory_reference["key"])
    assert theory_reference["converged"].all()


def test_resume_of_a_complete_store_computes_nothing(tmp_path, monkeypatch, theory_reference):
    store = tmp_path / "s.sqlite"
    kw = dict(THEORY, grid={"alpha": THEORY["grid"]["alpha"], "eta": [0.0, 3.0]})
    first = S.sweep("theory", store=store, n_jobs=1, progress=False, **kw)
    assert complete_tasks(store) == 2

    def boom(task):
        raise AssertionError("a stored task was recomputed")

    monkeypatch.setattr(S.tasks, "run_task", boom)  # where the campaign's task looks it up
    again = S.sweep("theory", store=store, n_jobs=1, progress=False, **kw)
    same_rows(again, first)
    assert complete_tasks(store) == 2
    ref = theory_reference[theory_reference["eta"].isin([0.0, 3.0])]
    same_rows(first, ref)


def test_store_keeps_kinds_apart_and_exports_the_committed_form(tmp_path):
    store, csv = tmp_path / "s.sqlite", tmp_path / "s.csv"
    theory = S.sweep("theory", store=store, csv=csv, n_jobs=1, progress=False,
                     **dict(THEORY, grid={"alpha": [1.0, 2.0], "eta": [1.0, 0.0]}))
    sim = S.sweep("rf", {"alpha": [1.0]}, store=store, d=20, n_test=100, seeds=1, n_jobs=1,
                  progress=False)
    assert len(S.read_store(store, "theory")) == 4 and len(S.read_store(store, "rf")) == 1
    assert len(sim) == 1
    exported = pd.read_csv(csv)
    assert list(exported.columns) == list(S.columns("theory"))  # no checksum column
    assert list(exported["eta"]) == [0.0, 0.0, 1.0, 1.0]  # sorted by the parameters
    same = exported.sort_values(["eta", "alpha"]).reset_index(drop=True)
    ref = theory.sort_values(["eta", "alpha"]).reset_index(drop=True)
    np.testing.assert_array_equal(same["risk"].to_numpy(), ref["risk"].to_numpy())
    fresh = tmp_path / "other.sqlite"  # a new store starts from the exported CSV
    again = S.sweep("theory", store=fresh, csv=csv, n_jobs=1, progress=False,
                    **dict(THEORY, grid={"alpha": [1.0, 2.0], "eta": [1.0, 0.0]}))
    same_rows(again, theory)
    assert complete_tasks(fresh) == 2
    (tmp_path / "old.csv").write_text("key,task,crc\n")  # an old CSV store is not a store
    with pytest.raises(ValueError, match="not a campaign store"):
        S.sweep("theory", store=tmp_path / "old.csv", n_jobs=1, progress=False,
                **dict(THEORY, grid={"alpha": [1.0]}))


SIM = dict(grid={"alpha": [0.5, 2.0], "lam": [0.01, 0.1], "eta": [0.0, 1.0]}, d=40, n_test=400,
           seeds=3, summary=False, progress=False)


@pytest.fixture(scope="module")
def network_in_process() -> pd.DataFrame:
    return S.sweep("network", n_jobs=1, **SIM)


def test_local_pool_two_workers_equals_one_process(network_in_process):
    # in process BLAS may use several threads, in the pool one per worker: the runner pins one
    same_rows(S.sweep("network", n_jobs=2, **SIM), network_in_process)


def test_dask_local_cluster_two_workers_equals_local_pool(network_in_process):
    pytest.importorskip("distributed", reason="dask.distributed is not installed (optional "
                        "extra: pip install 'giantstep[dask]')")
    local = S.sweep("network", n_jobs=2, **SIM)  # the pool of the test above, reused
    dask = S.sweep("network", n_jobs=2, scheduler="dask", **SIM)
    same_rows(dask, local)
    same_rows(local, network_in_process)
    assert len(local) == 2 * 3 * 4 and local["key"].is_unique
    assert local["risk"].nunique() == len(local)  # seeds differ across points and repetitions


def test_simulation_seeds_come_from_the_parameters():
    kw = dict(d=30, n_test=200, seeds=2, n_jobs=1, summary=False, progress=False)
    a = S.sweep("rf", {"alpha": [0.5, 1.0], "lam": [0.1]}, **kw)
    b = S.sweep("rf", {"alpha": [1.0, 0.5], "lam": [0.1, 0.01]}, **kw)  # other grid order
    merged = a.merge(b, on="key", suffixes=("", "_b"))
    assert len(merged) == len(a) == 4
    assert (merged["risk"] == merged["risk_b"]).all()
    other = S.sweep("rf", {"alpha": [0.5, 1.0], "lam": [0.1]}, seed=1, **kw)
    assert not np.any(other["risk"].to_numpy() == a["risk"].to_numpy())
    summary = S.summarize(a)
    assert len(summary) == 2 and (summary["seeds"] == 2).all()
    first = a[a["alpha"] == 0.5]["risk"].to_numpy()
    assert summary["risk"].iloc[0] == pytest.approx(first.mean(), rel=1e-15)
    assert summary["se"].iloc[0] == pytest.approx(first.std(ddof=1) / math.sqrt(2), rel=1e-12)


def test_validation_cli_sweep_with_heatmap(tmp_path, capsys):
    from validation.cli import main

    out, png = tmp_path / "r.csv", tmp_path / "h.png"
    rc = main(["sweep", "--kind", "rf", "--grid", "alpha=0.5:2:3", "--grid", "lam=0.01,0.1",
               "--d", "40", "--n-test", "400", "--seeds", "2", "--n-jobs", "1", "--quiet",
               "--out", str(out), "--plot", str(png)])
    assert rc == 0
    df = pd.read_csv(out)
    assert len(df) == 6 and df["converged"].all() and (df["seeds"] == 2).all()
    assert sorted(df["alpha"].unique()) == [0.5, 1.25, 2.0]
    assert png.stat().st_size > 10_000


@pytest.mark.parametrize("argv, word", [
    (["--grid", "alpha=0.5,1", "--plot", "x.png"], "heat map needs exactly two"),
    (["--grid", "alpha=0:1:3"], "alpha must be > 0"),
    (["--grid", "foo=1,2"], "grid parameter must be one of"),
    (["--grid", "d=10", "--grid", "eta=0,1"], "'d' is not one of the theory parameters"),
    (["--grid", "sigma=tanh,nope"], "nope"),
])
def test_theory_sweep_bad_input_exits_2_with_one_line(capsys, argv, word):
    from validation.cli import main

    try:
        rc = main(["sweep", "--kind", "theory", "--n-jobs", "1", "--quiet", *argv])
    except SystemExit as exc:
        rc = exc.code
    assert rc == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("error:") and word in err[0], err


# ------------------------------------------------------------------------------------------------
# fuzzing the theory through the runner


def log_uniform(lo: float, hi: float):
    return st.floats(math.log10(lo), math.log10(hi)).map(lambda e: float(10.0**e))


def zero_or(strategy):
    return st.one_of(st.just(0.0), strategy)


FUNCTIONS = st.sampled_from(available())
THEORY_SPACE = st.fixed_dictionaries(dict(
    sigma=FUNCTIONS, target=FUNCTIONS, alpha0=log_uniform(1e-3, 1e3),
    eta=zero_or(log_uniform(1e-3, 1e2)), lam=zero_or(log_uniform(1e-6, 1e3)),
    beta=log_uniform(1e-2, 1e2), delta=zero_or(log_uniform(1e-4, 1e2))))
ALPHAS = st.lists(log_uniform(1e-3, 1e3), min_size=1, max_size=4, unique=True).map(sorted)


#: the share of fuzzed points the solver must converge on: measured 26 of 31 (0.84) on the
#: derandomised sample below; a solver that gives up everywhere (all NaN, formally "honest")
#: fails here
MIN_CONVERGED_SHARE = 0.7


def test_fuzz_theory_never_reports_an_unconverged_point_as_a_number():
    converged: list[bool] = []

    @settings(max_examples=15, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow])
    @given(params=THEORY_SPACE, alphas=ALPHAS)
    def check(params, alphas):
        df = S.sweep("theory", {"alpha": alphas}, n_jobs=1, progress=False, **params)
        assert len(df) == len(alphas) and list(df["alpha"]) == alphas
        for name, value in params.items():
            assert (df[name] == value).all(), name
        finite = np.isfinite(df["risk"].to_numpy())
        assert (finite == df["converged"].to_numpy()).all(), df[["alpha", "risk", "converged"]]
        ok = df[df["converged"]]
        assert (ok["risk"] >= 0).all() and (ok["residual"] <= 1e-10).all()
        assert (df.loc[~df["converged"], "status"] != "converged").all()
        converged.extend(bool(c) for c in df["converged"])

    check()
    share = sum(converged) / len(converged)
    assert share >= MIN_CONVERGED_SHARE, f"{share:.2f} of {len(converged)} fuzzed points converged"


RULES = {"alpha": "> 0", "alpha0": "> 0", "beta": "> 0", "eta": ">= 0", "lam": ">= 0",
         "delta": ">= 0"}


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(RULES)),
       value=st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.just(0.0),
                       st.just(-0.0), st.text(max_size=4), st.booleans()))
def test_fuzz_invalid_parameters_raise_a_value_error_that_names_them(name, value):
    params = dict(sigma="tanh", target="tanh", alpha0=2.0, eta=1.0, lam=0.01, beta=1.0,
                  delta=0.0, alpha=1.0)
    params[name] = value
    valid = (isinstance(value, float) and math.isfinite(value)
             and (value > 0 if RULES[name] == "> 0" else value >= 0))
    if valid:
        tasks = S.plan("theory", **params)
        assert len(tasks) == 1 and dict(tasks[0].params).get(name, tasks[0].alphas[0]) == value
    else:
        with pytest.raises(ValueError, match=name):
            S.plan("theory", **params)


def test_asymptotics_import_path_stays_light():
    code = ("import sys, asymptotics, asymptotics.cli.curve; asymptotics.cli.curve.build_parser(); "
            "print(sorted(m for m in ('joblib', 'dask', 'distributed', 'threadpoolctl', "
            "'validation.protocol.simulator') if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"


def test_theory_kinds_are_the_srf_equations_and_the_network_theory(tmp_path):
    """kind "theory" sweeps the sRF equations (the stored sweeps and figures), kind
    "theory-network" the network theory: each equals risk_curve of that model, they differ at
    eta > 0, share a store's columns, and are keyed apart in one store."""
    import asymptotics as A

    grid = {"alpha": [0.5, 2.0], "eta": [0.0, 1.0]}
    fixed = dict(sigma="relu", target="tanh", alpha0=2.0, lam=0.01)
    store = tmp_path / "s.sqlite"
    srf = S.sweep("theory", grid, n_jobs=1, progress=False, **fixed)
    net = S.sweep("theory-network", grid, n_jobs=1, progress=False, store=store, **fixed)
    assert list(srf.columns) == list(net.columns)
    for df, model in ((srf, "srf"), (net, "network")):
        for eta, sub in df.groupby("eta"):
            ref = A.risk_curve([0.5, 2.0], eta=float(eta), model=model, progress=False, **fixed)
            np.testing.assert_allclose(sub["risk"].to_numpy(), ref["risk"].to_numpy(),
                                       rtol=1e-12)
    on = net["eta"] > 0
    assert (net.loc[on, "model"] == "network").all() and (srf["model"] == "srf").all()
    assert not np.allclose(net.loc[on, "risk"], srf.loc[srf["eta"] > 0, "risk"])
    assert set(net["key"]).isdisjoint(set(srf["key"]))
