"""``benchmarks/bench_engine.py`` section 3 (curves after three steps): a refused setting (the
library's ``ValueError``, e.g. relu sigma and target at alpha0 = inf, docs/THEORY.md §12.4) is
printed on one line and left out of the summary; the settings that returned are summarised."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import bench_engine

    yield bench_engine
    sys.modules.pop("bench_engine", None)


def test_section3_refusal_is_printed_and_skipped(bench, monkeypatch, capsys):
    def risk_curve(alphas, model="srf", steps=3, readout="pm1", lam=0.01, **kw):
        if kw["sigma"] == "relu":
            raise ValueError("not computed: pass a finite alpha0")
        return pd.DataFrame({"risk": [1.0] * len(alphas), "converged": [True] * len(alphas)})

    class _Pt:
        risk = 1.0

    monkeypatch.setattr(bench.A, "risk_curve", risk_curve)
    monkeypatch.setattr(bench.A, "risk", lambda *a, **k: _Pt())
    monkeypatch.setattr(bench, "curve_rounds", lambda curve, rounds=1: {
        "ref": (1e-3, 1e-3), "computed": (2e-2, 2e-2), "cached": (1e-2, 1e-2)})
    monkeypatch.setattr(bench, "_clear_steps_cache", lambda: None)
    bad = dict(sigma="relu", target="relu", readout="pm1", alpha0=float("inf"), eta=(1.0, 2.0, 3.0))
    ok = dict(bench.STEPS_SETTING, readout="constant")
    bench.steps_curves([bad, ok])
    out = capsys.readouterr().out.splitlines()
    refused = [line for line in out if "refused:" in line]
    assert len(refused) == 1 and "'sigma': 'relu'" in refused[0]
    summary = [line for line in out if line.startswith("100-alpha curves after three steps")]
    assert len(summary) == 2
    assert all("2 settings" in line and "; 1 refused" in line for line in summary)
    assert all("median 20x" in line for line in summary[:1])
