"""The CSV row store (validation.store): the validation matrix, the figures' cache and the
spectra experiment's data go through it, and their committed
files are blocks of it as they are (the ported campaigns: tests/test_campaign.py)."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pandas as pd
import pytest

from validation import matrix as M
from validation.store import Layout, Store, TableCache, format_rows, header_of, read_blocks

ROOT = Path(__file__).resolve().parents[1]
MATRIX_STORE = ROOT / "validation" / "data" / "matrix_runs.csv"
USERS = ["validation/matrix.py", "figures/cache.py", "validation/experiments/spectra.py"]


def _imported(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            mod = ("." * node.level) + (node.module or "")
            out |= {f"{mod}.{a.name}" if mod.endswith(".") is False else mod + a.name
                    for a in node.names}
            out.add(mod)
    return out


@pytest.mark.parametrize("rel", USERS)
def test_every_cache_goes_through_the_one_store(rel):
    """Each keeps its rows through validation.store and writes no CSV of its own."""
    text = (ROOT / rel).read_text()
    mods = _imported(ROOT / rel)
    assert mods & {"validation.store", ".store", "validation"}, f"{rel} does not use the store"
    for own in ("to_csv(", "csv.writer", "DictWriter", 'open(path, "a"'):
        assert own not in text, f"{rel} writes rows itself ({own})"


def test_matrix_store_is_the_store_format_byte_for_byte():
    """Formatting the committed matrix rows through the store's layout gives the file back, and
    the store reads exactly what a plain CSV reader reads: the format did not change."""
    df = M.read_store(MATRIX_STORE)
    plain = pd.read_csv(MATRIX_STORE)
    pd.testing.assert_frame_equal(df, plain, check_exact=True)
    text = "".join(format_rows(df.to_dict("records"), M.FIELDS, M.LAYOUT))
    assert M.FIELDS == header_of(MATRIX_STORE)
    assert text == MATRIX_STORE.read_text().split("\n", 1)[1]
    blocks = read_blocks(MATRIX_STORE, M.FIELDS, M.LAYOUT)
    assert sum(map(len, blocks.values())) == len(plain) and len(plain) == 8 * len(blocks)


def _fake_repetition(ms, model, d, rep, estimator="cv"):
    return [dict(key=ms.key, sigma=ms.sigma, target=ms.target, beta=ms.beta, alpha0=ms.alpha0,
                 eta=ms.eta, model=model, d=d, seed_root=M.setting_seed(ms, model, d), rep=rep,
                 alpha=a, lam=lam, risk=0.25 + rep + a / 7, seconds=0.5, estimator=estimator)
            for a in M.ALPHAS for lam in M.LAMS]


def test_matrix_runner_appends_blocks_resumes_and_cuts_a_torn_write(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(M, "_task", _fake_repetition)
    ms = M.matrix_settings()[1]
    store = tmp_path / "runs.csv"
    todo = [(ms, "srf", 100, rep) for rep in range(3)]
    assert M._execute(todo, store, 1, math.inf, "cv")
    df = M.read_store(store)
    assert len(df) == 24 and sorted(set(df["rep"])) == [0, 1, 2]
    assert df["risk"].tolist() == [r["risk"] for t in todo for r in _fake_repetition(*t)]
    # a kill in the middle of the last block: cut on the next open, that repetition missing
    data = store.read_bytes()
    store.write_bytes(data[: len(data) - 40])
    assert len(M.read_store(store)) == 16
    with Store(store, M.FIELDS, M.LAYOUT) as db:
        assert len(db.blocks) == 2
    assert "dropped a torn write" in capsys.readouterr().err
    todo_left = M.plan(M.read_store(store), 0.0, 3, 3, [(ms, "srf", 100)])
    assert [t[3] for t in todo_left] == [2]
    # the time budget: nothing starts once it is spent
    assert not M._execute(todo_left, store, 1, 0.0, "cv")
    assert M._execute(todo_left, store, 1, math.inf, "cv")
    pd.testing.assert_frame_equal(M.read_store(store), df, check_exact=True)
    # a second writer is refused; damage followed by intact rows is not a torn write
    with Store(store, M.FIELDS, M.LAYOUT):
        with pytest.raises(ValueError, match="in use by another running"):
            M._execute(todo, store, 1, math.inf, "cv")
    lines = store.read_text().splitlines(keepends=True)
    lines[3] = lines[3][:10] + "\n"
    store.write_text("".join(lines))
    with pytest.raises(ValueError, match="damaged at line 4"):
        Store(store, M.FIELDS, M.LAYOUT)


def test_figure_cache_writes_once_in_the_committed_format(tmp_path, monkeypatch):
    from figures import cache
    from validation import simulator as S

    monkeypatch.setattr(cache, "DATA_DIR", tmp_path / "data")
    monkeypatch.setenv("GIANTSTEP_CACHE", str(tmp_path / "user"))
    setting = S.Setting(model="rf", sigma="tanh", target="tanh", alpha=1.0, alpha0=1.0, eta=0.0,
                        d=30, n_test=200, lam=0.1)
    first = cache.cached_curve("t", setting, [0.5, 1.0], [0.1, 1.0], seeds=2)
    files = list(tmp_path.rglob("t_*.csv"))
    assert len(files) == 1
    expected = pd.DataFrame([r.as_dict() for r in S.simulate_curve(
        setting, [0.5, 1.0], [0.1, 1.0], seeds=2)])
    expected["seconds"] = first["seconds"]  # timings differ from run to run
    text = files[0].read_text()
    again_text = expected.to_csv(index=False, float_format="%.10g")
    assert text.split("\n", 1)[0] == again_text.split("\n", 1)[0]
    cols = [c for c in first.columns if c != "seconds"]
    pd.testing.assert_frame_equal(first[cols], pd.read_csv(files[0])[cols], check_exact=True)

    def no_simulation(*args, **kwargs):
        raise AssertionError("a cached curve was simulated again")

    monkeypatch.setattr(S, "simulate_curve", no_simulation)
    pd.testing.assert_frame_equal(cache.cached_curve("t", setting, [0.5, 1.0], [0.1, 1.0],
                                                     seeds=2), first, check_exact=True)


@pytest.mark.parametrize("name", ["spectra"])  # multistep: tests/test_campaign.py
def test_committed_experiment_data_are_complete_blocks_of_the_store(name):
    import importlib

    mod = importlib.import_module(f"validation.experiments.{name}")
    for path in sorted((ROOT / "validation" / "reports" / "data").glob(f"{name}_*.csv")):
        cols = header_of(path)
        layout = mod.SPECTRUM_LAYOUT if path.name.endswith("_spectrum.csv") else mod.LAYOUT
        blocks = read_blocks(path, cols, layout)
        rows = sum(1 for _ in path.open()) - 1
        assert sum(map(len, blocks.values())) == rows, f"{path.name}: rows outside blocks"


def test_table_cache_widens_its_header_and_keeps_the_numbers(tmp_path):
    layout = Layout(block=lambda row: row["k"], size=lambda row: 1)
    path = tmp_path / "t.csv"
    with TableCache(path, path, layout) as t:
        t.add([{"k": "a", "x": 0.1}])
        t.add([{"k": "b", "x": 0.2, "y": 3}])
        assert t.get("a") is not None and t.cols == ("k", "x", "y")
    again = TableCache(path, path, layout)
    df = again.frame(["a", "b"])
    assert df["x"].tolist() == [0.1, 0.2] and math.isnan(df["y"][0]) and df["y"][1] == 3
