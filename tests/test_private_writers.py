"""No private writers: every module of validation/ and figures/ is scanned (not a hand-picked
file). Rows of an experiment reach a file only through the campaign store's atomic export
(validation.campaign.store) or the figures' row cache (validation.protocol.rows); nothing appends
to a
file (a kill mid-append leaves a torn line that nothing removes); a table written with
``to_csv`` / ``csv.writer`` is a derived table written whole, only in the modules listed here
with what they write."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODULES = sorted(p for pkg in ("validation", "figures") for p in (ROOT / pkg).rglob("*.py"))

#: the modules that may call to_csv / csv.writer, and what they write (whole files)
TABLE_WRITERS = {
    "validation/campaign/store.py": "the campaigns' CSV export (atomic, sorted) and keys files",
    "validation/protocol/rows.py": "the figures' row cache (atomic)",
    "validation/matrix/report.py": "the matrix summary, derived from the stored runs",
    "validation/compare.py": "--out: the comparison table, or stdout",
    "validation/sweep/cli.py": "--out: the sweep's result table, or stdout",
    "validation/multistep/cli.py": "--out: the repetitions' table; the summary on stdout",
    "validation/matrix/finite_width.py": "the report's matrix table into --out/data",
    "validation/experiments/polynomial_spikes/report.py": "the report's table into --out/data",
    "validation/experiments/network_steps_report.py": "the report's points table and its theory "
                                                       "cache, derived and written whole "
                                                       "(atomically)",
    "validation/experiments/spectra_theory.py": "--onestep: the theory's outliers at the "
                                                "simulated d beside spectra_onestep.csv "
                                                "(spectra_theory_onestep.csv, derived, no "
                                                "simulation), written whole (atomically)",
    "validation/experiments/spectra_weights/twostep.py": "the two-step count predicted at the "
                                                         "simulated d (spectra_grid_theory.csv, "
                                                         "theory only, no simulation), written "
                                                         "whole (atomically)",
    "validation/experiments/spectra_weights/cells.py": "--retheory: a committed cell CSV with "
                                                       "its theory columns recomputed (every "
                                                       "simulated column kept; no simulation), "
                                                       "written whole (atomically)",
    "validation/experiments/spectra_weights/rowvar.py": "the row-variance check tables "
                                                        "(spectra_rowvar_check.csv, "
                                                        "spectra_rowvar_batch.csv): means and "
                                                        "s.e. over the per-draw rows of the "
                                                        "campaign store's export "
                                                        "(spectra_rowvar_draws.csv, "
                                                        "spectra_rowvar_batch_draws.csv) beside "
                                                        "the theory's columns, derived, written "
                                                        "whole (atomically)",
    "validation/experiments/steps_compare.py": "--out: the theory-against-simulation table of "
                                               "one call (means and s.e. over the repetitions it "
                                               "ran, nothing stored or reused), or stdout",
}


def _rel(p: Path) -> str:
    return p.relative_to(ROOT).as_posix()


def _calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) \
                else ""
            yield name, node


def _appends(name: str, call: ast.Call) -> bool:
    def is_append(arg: ast.AST | None) -> bool:
        return isinstance(arg, ast.Constant) and isinstance(arg.value, str) and "a" in arg.value
    if any(k.arg == "mode" and is_append(k.value) for k in call.keywords):
        return name not in ("parse",)  # ast.parse(mode="eval") is no file
    return name == "open" and len(call.args) > 1 and is_append(call.args[1])


def test_the_scan_sees_every_module():
    rels = {_rel(p) for p in MODULES}
    assert len(rels) > 50 and "validation/spiked/readouts.py" in rels
    assert set(TABLE_WRITERS) <= rels, set(TABLE_WRITERS) - rels


@pytest.mark.parametrize("path", MODULES, ids=_rel)
def test_no_module_appends_or_writes_rows_of_its_own(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    rel = _rel(path)
    for name, call in _calls(tree):
        assert not _appends(name, call), f"{rel}:{call.lineno} appends to a file ({name})"
        if name in ("to_csv", "writer", "DictWriter"):
            assert rel in TABLE_WRITERS, (f"{rel}:{call.lineno} writes a table itself ({name}): "
                                          "rows go through validation.campaign")


def test_the_scan_catches_an_append(tmp_path):
    tree = ast.parse('df.to_csv(p, mode="a")\nopen(p, "a")\nast.parse(t, mode="eval")\n')
    found = [name for name, call in _calls(tree) if _appends(name, call)]
    assert found == ["to_csv", "open"]


@pytest.mark.parametrize("argv", [
    ["validation", "sweep", "--grid", "alpha=1", "--store", "results.csv"],
    ["validation.spiked", "readouts", "run", "--store", "runs.csv"],
    ["validation.spiked", "run", "--store", "runs.csv"],
])
def test_a_store_under_a_csv_name_is_refused(argv, tmp_path, monkeypatch, capsys):
    """The stores are SQLite: a ``--store`` named ``.csv`` would hold SQLite under a CSV name."""
    import importlib

    monkeypatch.chdir(tmp_path)
    mod = importlib.import_module(argv[0] + ".cli")
    main = mod.main
    with pytest.raises(SystemExit) as exc:
        raise SystemExit(main(argv[1:]))
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --store") and ".sqlite" in err and len(err.splitlines()) == 1
    assert not (tmp_path / argv[-1]).exists()
