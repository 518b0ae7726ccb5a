"""The tutorials (docs/tutorials/*.py) run end to end: every number they state is computed in
them, and every agreement they state is asserted, so a tutorial fails here when it stops holding.

Each tutorial is a jupytext percent script. It runs here as a plain script in a fresh interpreter
(``runpy`` in a subprocess, ``MPLBACKEND=Agg``), the way a reader runs it: this needs no
notebook machinery, so the default test dependencies stay light. The notebook form is checked
too when jupytext, nbclient and ipykernel are installed (the ``docs`` extra): tutorial 1 by
default, all of them in the slow suite. Quick mode unless ``GIANTSTEP_FULL=1`` is set.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = sorted((ROOT / "docs" / "tutorials").glob("[0-9][0-9]_*.py"))
NAMES = [p.stem for p in TUTORIALS]
TIMEOUT = 600  # seconds: generous, a cold numba cache compiles the kernels first


def _env() -> dict[str, str]:
    env = dict(os.environ, MPLBACKEND="Agg")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def test_the_six_tutorials_exist() -> None:
    assert NAMES == ["01_first_curves", "02_theory_vs_simulation", "03_reproduce_a_figure",
                     "04_your_own_model", "05_beyond_one_step", "06_spectra"]
    index = (ROOT / "docs" / "tutorials" / "index.md").read_text(encoding="utf-8")
    for path in TUTORIALS:
        text = path.read_text(encoding="utf-8")
        assert "format_name: percent" in text or "formats: py:percent" in text, path.name
        assert "# %% [markdown]" in text and "\n# %%\n" in text, path.name
        assert f"({path.name})" in index, f"docs/tutorials/index.md does not link {path.name}"


@pytest.mark.parametrize("path", TUTORIALS, ids=NAMES)
def test_tutorial_runs_as_a_script(path: Path, tmp_path: Path) -> None:
    code = f"import runpy; runpy.run_path({str(path)!r}, run_name='__main__')"
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=TIMEOUT)
    seconds = time.perf_counter() - t0
    assert proc.returncode == 0, (f"{path.name} failed:\n{proc.stdout[-2000:]}\n"
                                  f"{proc.stderr[-3000:]}")
    print(f"{path.name}: {seconds:.1f} s")


def _notebook_cases():
    slow = pytest.mark.slow
    return [pytest.param(p, id=p.stem, marks=() if i == 0 else (slow,))
            for i, p in enumerate(TUTORIALS)]


@pytest.mark.parametrize("path", _notebook_cases())
def test_tutorial_runs_as_a_notebook(path: Path, tmp_path: Path) -> None:
    jupytext = pytest.importorskip("jupytext", reason="notebook form: pip install -e '.[docs]'")
    nbclient = pytest.importorskip("nbclient", reason="notebook form: pip install -e '.[docs]'")
    pytest.importorskip("ipykernel", reason="notebook form: pip install -e '.[docs]'")
    nb = jupytext.read(path)
    assert len(nb.cells) > 5
    env = _env()
    old = {k: os.environ.get(k) for k in ("MPLBACKEND", "PYTHONPATH")}
    os.environ.update(MPLBACKEND=env["MPLBACKEND"], PYTHONPATH=env["PYTHONPATH"])
    try:  # the kernel inherits this process's environment
        nbclient.NotebookClient(nb, timeout=TIMEOUT, kernel_name="python3",
                                resources={"metadata": {"path": str(tmp_path)}}).execute()
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert any(o.get("output_type") == "stream" for o in outputs)
