"""Every registered figure renders in --quick mode (smoke test)."""

import os
import subprocess
import sys

from figures.__main__ import available


def test_every_figure_renders_in_quick_mode(tmp_path):
    names = list(available())
    assert names == ["feature_learning", "batch_size", "bounds", "double_descent", "spectrum",
                     "staircase", "outliers", "phase_diagram"]  # the full list, in order
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
