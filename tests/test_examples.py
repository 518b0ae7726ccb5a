"""The examples run end to end (each in a fresh interpreter, as a user would run them)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def test_double_descent_example(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "double_descent.py"),
                           "--outdir", str(tmp_path)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "double_descent_example.png").stat().st_size > 10_000
    df = pd.read_csv(tmp_path / "double_descent_example.csv")
    assert df["converged"].all() and len(df) == 3 * 4 * 49
    # the ridgeless point at the interpolation threshold is reported as divergent, not a number
    assert proc.stdout.count("lam=0: nan (diverged)") == 3
    # small lam: the risk peaks at alpha = beta (the double descent)
    for beta in (0.5, 1.0, 2.0):
        sub = df[(df["beta"] == beta) & (df["lam"] == 1e-4)]
        peak = sub.loc[sub["risk"].idxmax(), "alpha"]
        assert abs(peak - beta) <= 0.05 * beta
