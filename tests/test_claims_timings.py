"""The guide's timing table quotes ``benchmarks/data/command_times.txt`` (written by
``python benchmarks/command_times.py --save ...``): the ranges are the file's min and max."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _rows() -> dict[str, tuple[float, float]]:
    out = {}
    for line in (ROOT / "benchmarks" / "data" / "command_times.txt").read_text().splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) >= 4 and not line.startswith(("#", "command")):
            out[parts[0]] = (float(parts[2]), float(parts[3]))
    return out


def _guide_row(start: str) -> str:
    rows = [r for r in (ROOT / "docs" / "guide.md").read_text().splitlines()
            if r.startswith(start)]
    assert len(rows) == 1, start
    return rows[0]


def test_the_guide_quotes_the_committed_command_times():
    t = _rows()
    cli = [t["asymptotics curve"], t["asymptotics hermite"], t["validation spectrum --d 1000"]]
    lo, hi = min(a for a, _ in cli), max(b for _, b in cli)
    assert f"| {lo:.1f}–{hi:.1f} s |" in _guide_row("| `asymptotics curve` (50 points)")
    sweep = t["validation sweep --kind theory (50 x 50)"]
    grid = t["risk_grid 50 x 50 (in process, after a first point)"]
    row = _guide_row("| `risk_grid` / `validation sweep --kind theory`")
    assert f"| {grid[0]:.2f}–{grid[1]:.2f} s in process / {sweep[0]:.1f}–{sweep[1]:.1f} s" in row
    fig = t["figures all --quick"]
    assert f"| {fig[0]:.0f}–{fig[1]:.0f} s |" in _guide_row("| `figures all --quick`")


def _cold_rows() -> dict[str, list[str]]:
    text = (ROOT / "benchmarks" / "data" / "cold_start_routes.txt").read_text()
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| route")]
    return {r[0]: r[1:] for r in rows}


def test_the_guide_quotes_the_committed_cold_start_routes():
    rows = _cold_rows()
    first = [float(r[0].rstrip("x")) for r in rows.values()]
    done = [float(r[4].rstrip(" s")) for r in rows.values()]
    guide = " ".join((ROOT / "docs" / "guide.md").read_text().split())
    assert f"are {min(first):.0f}–{max(first):.0f}x in process 1" in guide
    assert f"done {min(done):.0f}–{max(done):.0f} s after the first process" in guide
    k3, srf = rows["K=3, r=3"], rows["one-spike sRF"]
    assert f"K = 3, r = 3: {k3[1]} and {k3[2]} against {k3[3]} in numba's own mode" in guide
    assert f"the sRF point {srf[1]} and {srf[2]} against {srf[3]}" in guide
