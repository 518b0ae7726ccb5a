"""The committed experiment reports are what their builders write from the committed data: the
prose and tables of validation/reports/*.md are regenerated (no simulation: every row is in the
committed CSVs) and compared line by line, so a report cannot drift from its numbers."""

from __future__ import annotations

import re

import pytest

TIMING = ("Wall time of this run", "This report itself took")
TINY = re.compile(r"-?\d+(?:\.\d+)?e-(?:1[3-9]|[2-9]\d)")  # |x| < 1e-12: a numerical zero


def _normalise(text: str) -> list[str]:
    lines = []
    for line in text.rstrip().splitlines():
        for marker in TIMING:  # the only run-dependent sentences: the time of this regeneration
            if marker in line:
                line = line[:line.index(marker)]
        lines.append(TINY.sub("0", line).rstrip())
    return lines


def _silent(*args, **kwargs) -> None:
    pass


@pytest.mark.parametrize("name", ["spectra", "multistep"])
def test_committed_report_is_regenerated_from_committed_data(name, monkeypatch):
    import importlib

    data_name, text_name = {
        "spectra": ("validation.experiments.spectra", "validation.experiments.spectra_text"),
        "multistep": ("validation.multistep.experiment", "validation.multistep.text")}[name]
    data_mod = importlib.import_module(data_name)
    text_mod = importlib.import_module(text_name)

    def no_simulation(*args, **kwargs):
        raise AssertionError("a committed row is missing: the report would need a simulation")

    monkeypatch.setattr(data_mod, "simulate_row" if name == "spectra" else "run_repetitions",
                        no_simulation)
    plan = data_mod.plan_for(False)
    data = {n: data_mod.load_or_run(n, plan, log=_silent) for n in data_mod.EXPERIMENTS}
    if name == "spectra":
        figs = [data_mod.REPORTS / "figures" / f"spectra_{x}.png"
                for x in ("phase_diagram", "counts_vs_d", "reuse", "spectrum")]
        text = text_mod.build_report(data, plan, figs, 0.0)
    else:
        figs = [data_mod.REPORTS / "figures" / f"multistep_{x}.png"
                for x in ("staircase", "leap2", "leap4")]
        text, ok = text_mod.build_report(data, plan, figs, 0.0)
        assert ok, "a measured verdict disagrees with the Hermite prediction"
    committed = (data_mod.REPORTS / f"{name.upper()}.md").read_text()
    assert _normalise(text) == _normalise(committed)


ZERO = re.compile(r"-(0\.0+)(?!\d*[1-9])")  # "-0.000": the sign of a numerical zero
WRITTEN = re.compile(r"written in \d+ s")  # the matrix report's own wall time


def _same(text: str, committed: str) -> None:
    norm = [WRITTEN.sub("", ZERO.sub(r"\1", line)) for line in _normalise(text)]
    want = [WRITTEN.sub("", ZERO.sub(r"\1", line)) for line in _normalise(committed)]
    diff = [(i, a, b) for i, (a, b) in enumerate(zip(norm, want, strict=False)) if a != b]
    assert len(norm) == len(want) and not diff, diff[:3]


@pytest.mark.slow  # ~1-2 min: the theory of several steps at every point
def test_committed_steps_report_is_regenerated(tmp_path):
    from validation.multistep import theory as S

    assert S.main(["--out", str(tmp_path), "--quiet"]) == 0
    _same((tmp_path / "STEPS.md").read_text(), (S.REPORTS / "STEPS.md").read_text())


@pytest.mark.slow  # ~1 min: the K-group theory (p = infinity and p = d) at every point
def test_committed_spiked_report_is_regenerated(tmp_path):
    from validation.spiked import report as R

    path = R.write_report(tmp_path, progress=False)
    committed = R.campaign.COMMITTED.parents[1] / "SPIKED.md"
    _same(path.read_text(), committed.read_text())


@pytest.mark.slow  # ~1 min: the finite-p theory at every point and the matrix table
def test_committed_finite_width_report_is_regenerated(tmp_path):
    from validation.matrix import finite_width as FW

    assert FW.main(["--out", str(tmp_path), "--quiet"]) == 0
    _same((tmp_path / "FINITE_WIDTH.md").read_text(), (FW.REPORTS / "FINITE_WIDTH.md").read_text())
    assert (tmp_path / "data" / FW.MATRIX_OUT.name).read_bytes() == FW.MATRIX_OUT.read_bytes()


@pytest.mark.slow  # ~10 s each under load: the matrix's aggregation and theory at every point
@pytest.mark.parametrize("d,seeds,name", [(2000, 16, "REPORT.md"), (1000, 8, "REPORT_d1000.md")])
def test_committed_matrix_report_is_regenerated(d, seeds, name, tmp_path, monkeypatch):
    """validation/REPORT.md and REPORT_d1000.md, whole (not only their notes), are what
    ``python -m validation.matrix report`` writes from the committed repetitions; the d = 2000
    run also rewrites matrix_summary.csv, the same to its 8 printed digits but the last."""
    import shutil
    from pathlib import Path

    from validation.matrix import report

    root = Path(report.__file__).resolve().parents[1]
    data = tmp_path / "validation" / "data"
    data.mkdir(parents=True)
    shutil.copy(root / "validation" / "data" / "matrix_runs.csv", data)
    monkeypatch.chdir(tmp_path)  # the report names its paths relative to the working directory
    report.write_report(Path("validation/data/matrix_runs.csv"), Path("validation") / name, d=d,
                        seeds=seeds)
    _same((tmp_path / "validation" / name).read_text(),
          (root / "validation" / name).read_text())
    if d == 2000:  # 8 significant digits; the recomputed theory moves the last one (1e-8)
        import pandas as pd

        pd.testing.assert_frame_equal(
            pd.read_csv(data / "matrix_summary.csv"),
            pd.read_csv(root / "validation" / "data" / "matrix_summary.csv"), rtol=1e-6)


#: the literals the experiments' discussions may type by hand: protocol values (d, alpha,
#: lam, quadrature nodes, the ladder's widths), predicted exponents and rates, test tolerances
NOTE_LITERALS = {
    "readouts_notes.md": {"0", "0.01", "0.5", "1", "11", "1200", "1e-10", "2", "3", "4", "400",
                          "800"},
    "polynomial_spikes_notes.md": {"0", "0.1", "0.12", "0.2", "0.28", "0.30", "0.4", "0.56", "0.6",
                                   "1", "1.96", "10", "13", "1e10", "1e6", "2", "4", "95%"},
}


@pytest.mark.parametrize("name", sorted(NOTE_LITERALS))
def test_discussions_have_measured_numbers_only_through_placeholders(name):
    """Every measured number of an experiment's discussion is a placeholder computed from the
    data (``{{ ... }}``); what is left in the prose is a protocol value, a predicted exponent, a
    section number or a tolerance of the tests -- none of which a new run can move."""
    from validation.campaign.report import REPORTS

    template = (REPORTS / name).read_text()
    prose = re.sub(r"\{\{.*?\}\}", "", template, flags=re.S)
    literals = set(re.findall(r"\d+(?:\.\d+)?(?:e-?\d+)?%?x?", prose))
    extra = sorted(literals - NOTE_LITERALS[name])
    assert not extra, f"typed by hand: {extra}"
    assert "{{!" in template  # its qualitative claims are asserted
