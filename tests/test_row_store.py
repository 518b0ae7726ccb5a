"""The CSV row store (validation.protocol.rows): the figures' cache goes through it (the
experiments'
data are campaigns: tests/test_campaign.py)."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pandas as pd
import pytest

from validation.protocol.rows import Layout, TableCache

ROOT = Path(__file__).resolve().parents[1]
USERS = ["figures/cache.py"]


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
    """Each keeps its rows through validation.protocol.rows and writes no CSV of its own."""
    text = (ROOT / rel).read_text()
    mods = _imported(ROOT / rel)
    assert mods & {"validation.protocol.rows", ".store", "validation"}, \
        f"{rel} does not use the store"
    for own in ("to_csv(", "csv.writer", "DictWriter", 'open(path, "a"'):
        assert own not in text, f"{rel} writes rows itself ({own})"


def test_figure_cache_writes_once_in_the_committed_format(tmp_path, monkeypatch):
    from figures import cache
    from validation.protocol import simulator as S

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
