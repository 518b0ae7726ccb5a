"""Every registered figure renders in --quick mode (smoke test)."""

import os
import subprocess
import sys

import pytest

from figures.__main__ import available


@pytest.mark.slow  # ~15 s (every figure, with quick simulations); the default suite keeps the
# render of the full figures from the committed data
def test_every_figure_renders_in_quick_mode(tmp_path):
    names = list(available())
    assert names == ["feature_learning", "batch_size", "bounds", "double_descent", "spectrum",
                     "spectra_theory", "staircase", "outliers", "phase_diagram", "readouts",
                     "steps"]  # the full list
    out = subprocess.run([sys.executable, "-m", "figures", "all", "--quick", "--outdir",
                          str(tmp_path)], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    written = {}
    for line in out.stderr.splitlines():
        name, _, rest = line.partition(": ")
        if name in names:
            written[name] = [p for p in rest.rsplit(" (", 1)[0].split(", ")]
    assert set(written) == set(names)
    for name, paths in written.items():
        assert {p.rsplit(".", 1)[1] for p in paths} == {"png", "pdf"}, name
        for p in paths:
            assert p.startswith(str(tmp_path)) and os.path.getsize(p) > 1000, (name, p)


def test_unknown_figure_is_a_one_line_error():
    out = subprocess.run([sys.executable, "-m", "figures", "nope"], capture_output=True,
                         text=True)
    assert out.returncode == 2 and "unknown figure nope" in out.stderr


def test_full_figures_render_from_the_committed_simulation_data(tmp_path, monkeypatch):
    """The committed figures/data are cache hits: no figure recomputes a simulation (the cache key
    covers what determines the numbers and nothing else)."""
    import importlib

    import validation.protocol.simulator as S

    def no_simulation(*args, **kwargs):
        raise AssertionError("a committed simulation curve was not found in figures/data")

    monkeypatch.setattr(S, "simulate_curve", no_simulation)
    for name in ("fig_feature_learning", "fig_batch_size", "fig_bounds", "fig_double_descent"):
        paths = importlib.import_module(f"figures.{name}").make(tmp_path / name, quick=False)
        assert paths and all(p.exists() for p in paths), name
