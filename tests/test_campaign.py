"""The one campaign runner (validation.campaign): completed keys are skipped, a run killed at any
moment resumes to exactly the uninterrupted result, rows are stored in long format with their
types, the CSV export is deterministic, progress is reported, and the markdown writer and the
report directory behave."""

from __future__ import annotations

import io
import math
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from validation.campaign import Campaign, Schema, Store, run_campaign
from validation.campaign import report as R

ROOT = Path(__file__).resolve().parents[1]

TOY = textwrap.dedent('''
    """A toy campaign for tests/test_campaign.py: seeded rows, an optional pause per task."""
    import sys
    import time

    import numpy as np

    from validation.campaign import Campaign, Schema, Store, run_campaign

    SCHEMA = Schema.of(name=str, seed=int, rep=int, x=float, y=float, ok=bool)


    def task(setting):
        name, seed, pause = setting
        time.sleep(pause)
        rng = np.random.default_rng(seed)
        return [dict(name=name, seed=seed, rep=r, x=float(rng.standard_normal()),
                     y=float("nan") if r == 1 else float(rng.random()), ok=bool(r % 2))
                for r in range(3)]


    def campaign(n=40, pause=0.0):
        settings = [(f"s{i % 3}", 100 + i, pause) for i in range(n)]
        return Campaign("toy", settings, task, SCHEMA, key_columns=("name", "seed"),
                        key=lambda s: (s[0], s[1]), record=lambda s: s[:2])  # not the pause


    if __name__ == "__main__":
        db, n, pause, jobs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
        with Store(db) as st:
            run_campaign(campaign(n, pause), st, n_jobs=jobs, progress=False)
''')


@pytest.fixture
def toy(tmp_path, monkeypatch):
    (tmp_path / "toycampaign.py").write_text(TOY)
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    sys.modules.pop("toycampaign", None)
    return importlib.import_module("toycampaign")


def _export(store_path: Path, campaign: Campaign, csv: Path) -> bytes:
    with Store(store_path) as st:
        st.export_csv(campaign, csv)
    return csv.read_bytes()


def test_completed_keys_are_skipped(toy, tmp_path):
    calls = []

    def counted(setting):
        calls.append(setting)
        return toy.task(setting)

    small = Campaign("toy", toy.campaign(6).settings, counted, toy.SCHEMA,
                     key_columns=("name", "seed"), key=lambda s: (s[0], s[1]))
    with Store(tmp_path / "s.sqlite") as st:
        first = run_campaign(small.with_settings(small.settings[:4]), st, progress=False)
        assert (first.ran, first.skipped, first.complete) == (4, 0, True)
        second = run_campaign(small, st, progress=False)
        assert (second.ran, second.skipped) == (2, 4)
        assert run_campaign(small, st, progress=False).ran == 0
        assert len(calls) == 6 and len(st.done(small)) == 6
        assert st.forget(small, [small.key(small.settings[0])]) == 1  # rows and mark, together
        assert len(st.frame(small)) == 15
        assert run_campaign(small, st, progress=False).ran == 1 and len(calls) == 7


def test_rows_are_long_and_typed_and_a_task_is_one_transaction(toy, tmp_path):
    c = toy.campaign(3)
    path = tmp_path / "s.sqlite"
    with Store(path) as st:
        run_campaign(c, st, progress=False)
        df = st.frame(c)
        assert list(df.columns) == list(toy.SCHEMA.names) and len(df) == 9  # one row per rep
        assert df["ok"].tolist() == [False, True, False] * 3
        assert df["y"].isna().sum() == 3  # NaN kept (SQL NULL in a float column)
        bad = dict(toy.task(c.settings[0])[0], seed=999)  # a row of another task
        with pytest.raises(ValueError, match="has key"):
            st.write(c, ("s0", 100), [bad])
        with pytest.raises(ValueError, match="missing"):
            st.write(c, ("s9", 1), [{"name": "s9"}])
        with pytest.raises(ValueError, match="holds int"):
            st.write(c, ("s9", 1), [dict(name="s9", seed="1", rep=0, x=0.0, y=0.0, ok=True)])
        assert not st.write(c, ("s0", 100), toy.task(c.settings[0]))  # stored already
        assert len(st.frame(c)) == 9
    con = sqlite3.connect(path)
    cols = [r[1] for r in con.execute("PRAGMA table_info(toy)")]
    assert cols == [*toy.SCHEMA.names, "_task"]
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()
    other = Campaign("toy", (), toy.task, Schema.of(name=str, seed=int, z=float),
                     key_columns=("name",), key=lambda s: s)
    with Store(path) as st, pytest.raises(ValueError, match="other columns"):
        st.ensure(other)


def test_export_is_sorted_and_deterministic(toy, tmp_path):
    c = toy.campaign(12)
    with Store(tmp_path / "a.sqlite") as st:
        run_campaign(c, st, progress=False)
    with Store(tmp_path / "b.sqlite") as st:  # the tasks finished in the other order
        run_campaign(c.with_settings(c.settings[::-1]), st, progress=False)
    a = _export(tmp_path / "a.sqlite", c, tmp_path / "a.csv")
    assert a == _export(tmp_path / "b.sqlite", c, tmp_path / "b.csv")
    df = pd.read_csv(tmp_path / "a.csv")
    assert list(df.columns) == list(toy.SCHEMA.names)
    assert df[["name", "seed", "rep"]].equals(
        df[["name", "seed", "rep"]].sort_values(["name", "seed", "rep"]))
    with Store(tmp_path / "c.sqlite") as st:  # the CSV back into a store: the same export
        assert st.import_csv(c, tmp_path / "a.csv") == 12
        assert st.import_csv(c, tmp_path / "a.csv") == 0
    assert _export(tmp_path / "c.sqlite", c, tmp_path / "c.csv") == a


def test_budget_stops_starting_tasks_and_a_rerun_finishes(toy, tmp_path):
    c = toy.campaign(8, pause=0.05)
    with Store(tmp_path / "s.sqlite") as st:
        out = run_campaign(c, st, budget=0.12, progress=False)
        assert out.stopped and 0 < out.ran < 8
        rest = run_campaign(c, st, progress=False)
        assert rest.ran == 8 - out.ran and rest.complete
    with Store(tmp_path / "ref.sqlite") as st:
        run_campaign(c, st, progress=False)
    assert _export(tmp_path / "s.sqlite", c, tmp_path / "s.csv") == \
        _export(tmp_path / "ref.sqlite", c, tmp_path / "ref.csv")


def _kill_and_resume(toy, tmp_path, jobs: int) -> None:
    n, pause = 40, 0.05
    db = tmp_path / "killed.sqlite"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT),
                                                       os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, str(tmp_path / "toycampaign.py"), str(db), str(n),
                             str(pause), str(jobs)], env=env, start_new_session=True)
    done, t0 = 0, time.monotonic()
    while done < 8 and time.monotonic() - t0 < 60 and proc.poll() is None:
        time.sleep(0.02)
        if db.exists():
            try:
                con = sqlite3.connect(db, timeout=5)
                done = con.execute("SELECT count(*) FROM _tasks").fetchone()[0]
                con.close()
            except sqlite3.OperationalError:  # the table is not there yet
                pass
    os.killpg(proc.pid, signal.SIGKILL)  # the run and its workers, mid-way
    proc.wait(timeout=30)
    c = toy.campaign(n, pause=0.0)
    with Store(db) as st:
        stored = len(st.done(c))
        assert 8 <= stored < n, "the kill came too late to test a resume"
        rows = st.frame(c)
        assert len(rows) == 3 * stored  # whole tasks only
        again = run_campaign(c, st, progress=False)
        assert again.skipped == stored and again.ran == n - stored
    with Store(tmp_path / "whole.sqlite") as st:
        run_campaign(c, st, progress=False)
    assert _export(db, c, tmp_path / "killed.csv") == \
        _export(tmp_path / "whole.sqlite", c, tmp_path / "whole.csv")


def test_a_killed_run_resumes_to_the_uninterrupted_result(toy, tmp_path):
    _kill_and_resume(toy, tmp_path, jobs=1)


@pytest.mark.slow
def test_a_killed_parallel_run_resumes_to_the_uninterrupted_result(toy, tmp_path):
    _kill_and_resume(toy, tmp_path, jobs=2)


def test_parallel_run_equals_the_serial_one(toy, tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), str(ROOT),
                                                      os.environ.get("PYTHONPATH", "")]))
    c = toy.campaign(6)
    with Store(tmp_path / "p.sqlite") as st:
        assert run_campaign(c, st, n_jobs=2, progress=False).ran == 6
    with Store(tmp_path / "s.sqlite") as st:
        run_campaign(c, st, progress=False)
    assert _export(tmp_path / "p.sqlite", c, tmp_path / "p.csv") == \
        _export(tmp_path / "s.sqlite", c, tmp_path / "s.csv")


def test_progress_lines_without_a_terminal_and_quiet(toy, tmp_path):
    c = toy.campaign(4)
    out = io.StringIO()
    with Store(tmp_path / "s.sqlite") as st:
        run_campaign(c, st, progress=True, interval=0.0, stream=out)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("toy: 0 of 4 tasks stored, 4 to run")
    assert any("2/4 tasks" in ln for ln in lines) and lines[-1].startswith("toy: 4 of 4 tasks run")
    quiet = io.StringIO()
    with Store(tmp_path / "q.sqlite") as st:
        run_campaign(c, st, progress=False, interval=0.0, stream=quiet)
    assert quiet.getvalue() == ""


def test_duplicate_keys_in_a_plan_are_refused(toy, tmp_path):
    c = toy.campaign(2)
    with Store(tmp_path / "s.sqlite") as st, pytest.raises(ValueError, match="twice"):
        run_campaign(c.with_settings([*c.settings, c.settings[0]]), st, progress=False)


def test_markdown_writer():
    md = R.Markdown("Title")
    md.para("Some", "text.").heading("Numbers")
    md.table(pd.DataFrame({"a": [1.23456, 2.0], "b|c": ["x", "y|z"]}), formats={"a": ".3g"})
    md.regenerate("python -m validation.spiked report --out DIR")
    assert md.text() == ("# Title\n\nSome text.\n\n## Numbers\n\n| a | b\\|c |\n|---|---|\n"
                         "| 1.23 | x |\n| 2 | y\\|z |\n\n"
                         "Regenerate with: `python -m validation.spiked report --out DIR`\n")


def test_report_dir_needs_out_when_installed(tmp_path, monkeypatch):
    assert R.report_dir(tmp_path / "r") == tmp_path / "r"
    monkeypatch.setattr(R, "installed", lambda: False)
    assert R.report_dir(None) == R.REPORTS
    monkeypatch.setattr(R, "installed", lambda: True)
    with pytest.raises(ValueError, match="--out DIR"):
        R.report_dir(None)


def test_source_checkout_is_not_installed():
    assert not R.installed()


def test_committed_spiked_runs_are_the_export_of_their_store(tmp_path):
    from validation.spiked import campaign as SC

    c = SC.campaign()
    with Store(tmp_path / "s.sqlite") as st:
        st.import_csv(c, SC.COMMITTED)
        st.export_csv(c, tmp_path / "spiked_runs.csv")
    assert (tmp_path / "spiked_runs.csv").read_bytes() == SC.COMMITTED.read_bytes()


@pytest.mark.parametrize("module", ["validation.experiments.polynomial_spikes",
                                    "validation.spiked.readouts"])
def test_committed_runs_of_former_appenders_are_the_export_of_their_store(module, tmp_path):
    """The polynomial-spike and readout runs, once appended to their CSVs, are campaigns: the
    committed CSV is the export (in the plan's order) of its store, byte for byte."""
    import importlib

    m = importlib.import_module(module)
    c = m.campaign([500, 1000, 2000], [24, 12, 8]) if hasattr(m, "RUNS") else m.campaign()
    path = m.RUNS if hasattr(m, "RUNS") else m.STORE
    with Store(tmp_path / "s.sqlite") as st:
        assert st.import_csv(c, path) == len(c.settings)
        assert st.done(c) == set(c.plan_hashes())  # nothing to run
        st.export_csv(c, tmp_path / "runs.csv")
    assert (tmp_path / "runs.csv").read_bytes() == path.read_bytes()


def test_polynomial_spikes_run_into_the_cache_when_installed(tmp_path, monkeypatch):
    """Outside a checkout the runs go to the user cache (the committed CSV is read, not
    written); only the missing tasks run, through the campaign runner."""
    from validation.experiments import polynomial_spikes as PS

    monkeypatch.setattr(PS, "RUNS", tmp_path / "pkg" / "reports" / "data" / "runs.csv")
    monkeypatch.setattr("validation.paths.in_checkout", lambda _d: False)
    monkeypatch.setenv("GIANTSTEP_CACHE", str(tmp_path / "cache"))
    calls = []
    monkeypatch.setitem(PS.KINDS, "network", lambda s, d, rep: calls.append(rep) or 0.5 + rep)
    s = PS.SETTINGS[:1]
    first = PS.simulate([40], [3], kinds=("network",), settings=s, progress=False)
    assert calls == [0, 1, 2] and list(first.risk) == [0.5, 1.5, 2.5]
    written = tmp_path / "cache" / "validation" / "reports" / "data" / "runs.csv"
    assert written.exists() and written.with_suffix(".keys").exists()
    assert not (tmp_path / "pkg").exists()
    PS.simulate([40], [4], kinds=("network",), settings=s, progress=False)
    assert calls == [0, 1, 2, 3]  # the stored repetitions are not re-run


def test_committed_finite_width_runs_are_the_export_of_their_store(tmp_path):
    from validation.matrix import finite_width as FW

    c = FW.campaign([1000], 1)
    with Store(tmp_path / "s.sqlite") as st:
        assert st.import_csv(c, FW.RUNS) == len(pd.read_csv(FW.RUNS))  # one task per repetition
        st.export_csv(c, tmp_path / "runs.csv")
    assert (tmp_path / "runs.csv").read_bytes() == FW.RUNS.read_bytes()


def test_finite_width_tasks_are_its_committed_repetitions():
    """A task re-run gives its committed row (d = 1000, the first point of repetition 0): the same
    seed and eta; the risk to the last bits that BLAS thread counts move (a re-run with other
    thread counts differs in the 16th digit, the old runner's too)."""
    from validation.matrix import finite_width as FW

    committed = pd.read_csv(FW.RUNS)
    c = FW.campaign([1000], 1)
    job = c.settings[0]
    row = FW._task(job)[0]
    want = committed[(committed.sigma == row["sigma"]) & (committed.d == 1000)
                     & (committed.rsqp == row["rsqp"]) & (committed.rep == 0)].iloc[0]
    assert row["eta"] == want["eta"] and row["p"] == want["p"]
    assert row["risk"] == pytest.approx(want["risk"], rel=1e-12)


def test_committed_multistep_data_are_the_export_of_their_stores(tmp_path):
    from validation.multistep import experiment as MS

    for name in MS.EXPERIMENTS:
        c = MS.campaign(name, MS.FULL)
        path = MS.REPORTS / "data" / f"multistep_{name}.csv"
        with Store(tmp_path / f"{name}.sqlite") as st:
            assert st.import_csv(c, path) == len(c.settings)  # one task per repetition
            assert st.done(c) == {c.key_text(j) for j in c.settings}
            st.export_csv(c, tmp_path / f"{name}.csv")
        assert (tmp_path / f"{name}.csv").read_bytes() == path.read_bytes(), name


def test_committed_spectra_data_are_the_export_of_their_stores(tmp_path):
    """Each spectra table (one task per configuration, NaN keys as a token) and the spectrum
    figure's data are the sorted export of their store."""
    from validation.experiments import spectra as SP

    tables = [(SP.campaign(name, SP.FULL), f"spectra_{name}.csv") for name in SP.EXPERIMENTS]
    tables.append((SP.spectrum_campaign(SP.FULL), "spectra_spectrum.csv"))
    for c, fname in tables:
        path = SP.REPORTS / "data" / fname
        with Store(tmp_path / f"{c.name}.sqlite") as st:
            assert st.import_csv(c, path) == len(c.settings)  # one task per configuration
            assert st.done(c) == {c.key_text(j) for j in c.settings}
            st.export_csv(c, tmp_path / fname)
        assert (tmp_path / fname).read_bytes() == path.read_bytes(), fname


def test_spectra_one_step_keys_hold_the_nan_token():
    from validation.experiments import spectra as SP

    c = SP.campaign("onestep", SP.FULL)
    keys = [c.key_text(j) for j in c.settings]
    assert all(f'"{SP.NAN_KEY}"' in k for k in keys) and len(set(keys)) == len(keys)
    no_token = Campaign("t", c.settings, c.task, c.schema, c.key_columns, c.key)
    with pytest.raises(ValueError, match="non-finite"):
        no_token.key_text(c.settings[0])


def test_spectra_runs_what_its_data_lack_then_reads_them(tmp_path, monkeypatch):
    from validation.experiments import spectra as SP

    monkeypatch.setattr(SP, "REPORTS", tmp_path / "reports")  # not a checkout: the cache
    monkeypatch.setenv("GIANTSTEP_CACHE", str(tmp_path / "cache"))
    calls = []

    def fake_row(config, *, taylor=False):
        calls.append(config)
        return {**dict(zip(SP.KEYS, SP._key(config), strict=True)), "p": config.p,
                "n": config.n, "delta": config.delta, "measured": 1, "predicted": 1,
                "predicted_activation": 1, "weight_outliers": 2, "edge": 1.7, "threshold": 1.8,
                "top_sv": 3.0, "second_sv": 1.9, "seconds": 0.1,
                **{f"{w}{m}": 0.5 for m in range(1, 6) for w in ("amp", "floor")},
                "sv1": 3.0, "ov1_theta1": 0.7, "deg1": 1, "subspace_theta1": 0.7,
                "subspace_random": 0.1, "expansion_rms": 0.2,
                **{f"taylor{m}": 0.1 * m for m in range(1, 6)}}

    monkeypatch.setattr(SP, "simulate_row", fake_row)
    logs: list[str] = []
    first = SP.load_or_run("taylor", SP.QUICK, log=logs.append)
    assert "3 simulations" in logs[-1] and len(calls) == 3
    assert (tmp_path / "cache" / "reports" / "data" / "spectra_quick_taylor.csv").exists()
    again = SP.load_or_run("taylor", SP.QUICK, log=logs.append)
    assert "cached" in logs[-1] and len(calls) == 3
    pd.testing.assert_frame_equal(first, again)
    assert list(first["eta1"]) == list(SP.TAYLOR_ETAS)  # the plan's order
    assert math.isnan(first["sv2"][0])  # a column the row lacks: NaN


def test_multistep_runs_what_its_data_lack_then_reads_them(tmp_path, monkeypatch):
    from validation.multistep import experiment as MS

    monkeypatch.setattr(MS, "REPORTS", tmp_path / "reports")  # not a checkout: the cache
    monkeypatch.setenv("GIANTSTEP_CACHE", str(tmp_path / "cache"))
    logs: list[str] = []
    first = MS.load_or_run("he2_quadratic", MS.QUICK, log=logs.append)
    assert "4 repetitions simulated" in logs[-1]
    assert (tmp_path / "cache" / "reports" / "data" / "multistep_quick_he2_quadratic.csv").exists()
    again = MS.load_or_run("he2_quadratic", MS.QUICK, log=logs.append)
    assert logs[-1].endswith("cached")
    pd.testing.assert_frame_equal(first, again)
    assert list(first["d"].unique()) == list(MS.QUICK.ds_quadratic)


@pytest.mark.parametrize("command", [["validation.spiked.cli", "report"],
                                     ["validation.matrix.finite_width"],
                                     ["figures.multistep_report"],
                                     ["figures.spectra_report"]])
def test_installed_package_reports_need_out(command, monkeypatch, capsys):
    import importlib

    monkeypatch.setattr(R, "installed", lambda: True)
    main = importlib.import_module(command[0]).main
    assert main(command[1:]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "--out DIR" in err and len(err.splitlines()) == 1


def test_committed_phase_diagram_sweep_is_the_export_of_its_store(tmp_path):
    from validation.sweep import campaign

    path = next((ROOT / "figures" / "data").glob("phase_diagram_*.csv"))
    c = campaign("theory")
    with Store(tmp_path / "s.sqlite") as st:
        assert st.import_csv(c, path) == 50  # one task per curve along alpha
        st.export_csv(c, tmp_path / "pd.csv")
    assert (tmp_path / "pd.csv").read_bytes() == path.read_bytes()


def test_committed_spiked_reference_is_the_export_of_its_store(tmp_path):
    from validation.spiked import reference_runs as RR

    c = RR.campaign(reps=(0, 1, 2, 3))
    with Store(tmp_path / "s.sqlite") as st:
        st.import_csv(c, RR.COMMITTED)
        st.export_csv(c, tmp_path / "ref.csv")
    assert (tmp_path / "ref.csv").read_bytes() == RR.COMMITTED.read_bytes()


@pytest.mark.slow
def test_a_spiked_reference_task_gives_its_committed_values():
    from validation.spiked import reference_runs as RR

    committed = pd.read_csv(RR.COMMITTED)
    job = next(j for j in RR.campaign().settings if j[0].name == "K1r1-tanh-tanh")
    for row in RR._task(job):
        want = committed[(committed["name"] == row["name"]) & (committed["rep"] == 0)
                         & (committed["alpha"] == row["alpha"])].iloc[0]
        assert row["risk"] == pytest.approx(want["risk"], rel=1e-9)


def test_committed_matrix_runs_are_the_export_of_their_store(tmp_path):
    from validation.matrix import campaign as M

    path = ROOT / "validation" / "data" / "matrix_runs.csv"
    with Store(tmp_path / "s.sqlite") as st:
        n = st.import_csv(M.campaign(), path)
        st.export_csv(M.campaign(), tmp_path / "runs.csv")
    assert (tmp_path / "runs.csv").read_bytes() == path.read_bytes()
    df = M.read_store(path)
    assert len(df) == 8 * n  # one task per repetition, all alphas x lams
    pd.testing.assert_frame_equal(df, pd.read_csv(path), check_exact=True)


def _fake_repetition(ms, model, d, rep, estimator="cv"):
    from validation.matrix import campaign as M

    return [dict(key=ms.key, sigma=ms.sigma, target=ms.target, beta=ms.beta, alpha0=ms.alpha0,
                 eta=ms.eta, model=model, d=d, seed_root=M.setting_seed(ms, model, d), rep=rep,
                 alpha=a, lam=lam, risk=0.25 + rep + a / 7, seconds=0.5, estimator=estimator)
            for a in M.ALPHAS for lam in M.LAMS]


def test_matrix_runner_stores_repetitions_resumes_and_keeps_its_budget(tmp_path, monkeypatch):
    import math

    from validation.matrix import campaign as M

    monkeypatch.setattr(M, "_task", _fake_repetition)
    ms = M.matrix_settings()[1]
    store = tmp_path / "runs.csv"
    todo = [(ms, "srf", 100, rep) for rep in (2, 0)]
    assert M._execute(todo, store, 1, math.inf, "cv")
    df = M.read_store(store)  # the CSV: the SQLite store's sorted export
    assert len(df) == 16 and list(df["rep"].unique()) == [0, 2]
    assert M.sqlite_path(store).exists()
    todo_left = M.plan(df, 0.0, 3, 3, [(ms, "srf", 100)])
    assert [t[3] for t in todo_left] == [1]
    assert not M._execute(todo_left, store, 1, 0.0, "cv")  # the budget: nothing starts
    assert len(M.read_store(store)) == 16
    assert M._execute(todo_left, store, 1, math.inf, "cv")
    full = M.read_store(store)
    assert list(full["rep"].unique()) == [0, 1, 2]
    assert full["risk"].tolist() == [r["risk"] for rep in range(3)
                                     for r in _fake_repetition(ms, "srf", 100, rep)]
    M.sqlite_path(store).unlink()  # the CSV alone resumes: its repetitions are not re-run
    monkeypatch.setattr(M, "_task", lambda *a: pytest.fail("a stored repetition was re-run"))
    assert M._execute([(ms, "srf", 100, rep) for rep in range(3)], store, 1, math.inf, "cv")
    pd.testing.assert_frame_equal(M.read_store(store), full, check_exact=True)


def test_a_csv_of_the_former_row_store_is_read_without_its_checksum(tmp_path):
    """A sweep CSV written by the former CSV row store (a last ``crc`` column) is imported with
    the same rows; any other foreign header is refused naming the columns that differ."""
    import csv as _csv

    import pytest

    from validation.campaign import Store
    from validation.sweep import sweep
    from validation.sweep.tasks import campaign, plan

    kw = dict(sigma="tanh", target="tanh", alpha0=2.0, eta=1.0, lam=0.01)
    grid = {"alpha": [0.5, 2.0]}
    new_csv = tmp_path / "new.csv"
    df = sweep("theory", grid, store=tmp_path / "a.sqlite", csv=new_csv, progress=False,
               n_jobs=1, **kw)
    rows = list(_csv.reader(open(new_csv, newline="")))
    old_csv = tmp_path / "old.csv"
    with open(old_csv, "w", newline="") as fh:
        w = _csv.writer(fh, lineterminator="\n")
        w.writerow([*rows[0], "crc"])
        for r in rows[1:]:
            w.writerow([*r, "deadbeef"])
    again = sweep("theory", grid, store=tmp_path / "b.sqlite", csv=old_csv, progress=False,
                  n_jobs=1, **kw)
    assert again["risk"].tolist() == df["risk"].tolist()
    bad = tmp_path / "bad.csv"
    bad.write_text(",".join([*rows[0][:-1], "other"]) + "\n")
    tasks = plan("theory", grid, **kw)
    with Store(tmp_path / "c.sqlite") as st, pytest.raises(ValueError, match="other"):
        st.import_csv(campaign("theory", tasks), bad)
