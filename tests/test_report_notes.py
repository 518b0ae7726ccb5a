"""The investigation notes of validation/REPORT.md are rendered from the store: every number is
computed and every claim asserted when the report is regenerated (validation.matrix.notes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from validation.matrix import report
from validation.matrix.campaign import aggregate, read_store
from validation.matrix.notes import Context, render

ROOT = Path(__file__).resolve().parents[1]
STORE = ROOT / "validation" / "data" / "matrix_runs.csv"
REPORTS = {2000: (ROOT / "validation" / "REPORT.md", 16),
           1000: (ROOT / "validation" / "REPORT_d1000.md", 8)}
#: literal numbers the prose may hold outside placeholders: protocol values (d, alpha, lambda,
#: alpha0, eta_tilde, seeds of a command), enumerations, asserted bounds, and the named outside
#: sources (a benchmark; a separate d = 250 run with 16 seeds; a test's 1e-11)
LITERALS = {
    2000: {"2000", "20", "0.5", "1", "2", "3", "4", "4000", "500", "1000", "0", "2e-3", "1e-11",
           "6.5x", "1.2", "2.1x", "8", "10", "1%"},
    1000: {"0", "0.01", "0.1", "0.2", "0.5", "1", "16", "2", "2.5", "20", "200", "2000", "250",
           "3", "34%", "4000", "5"},
}


@pytest.fixture(scope="module")
def store():
    return read_store(STORE)


@pytest.fixture(scope="module")
def aggregated(store):
    """The store's aggregate over its first ``seeds`` repetitions, made once per seed count
    (~2 s each; two tests read the 16-seed one)."""
    made: dict[int, object] = {}

    def get(seeds: int):
        if seeds not in made:
            made[seeds] = aggregate(store, first_reps=seeds)
        return made[seeds].copy()
    return get


@pytest.mark.parametrize("d", sorted(REPORTS))
def test_committed_notes_hold_and_are_what_the_report_says(store, aggregated, d):
    path, seeds = REPORTS[d]
    text = report.notes(store, aggregated(seeds), d, seeds)
    assert text and "{{" not in text
    assert text in path.read_text(), f"{path.name} is not the rendering of its notes"


@pytest.mark.parametrize("d", sorted(LITERALS))
def test_notes_have_numbers_only_through_placeholders(d):
    """Every number of the notes that comes from the store is a placeholder: the literals left
    in the prose are protocol values, enumerations, asserted bounds and named outside sources."""
    import re

    template = report.notes_path(d).read_text()
    prose = re.sub(r"\{\{.*?\}\}", "", template, flags=re.S)
    literals = set(re.findall(r"\d+(?:\.\d+)?(?:e-?\d+)?%?x?", prose))
    assert literals <= LITERALS[d], f"numbers typed by hand: {sorted(literals - LITERALS[d])}"


def test_moved_numbers_make_the_report_fail(store):
    """If the simulations of the persistent miss came closer to the theory, the notes' claims
    about it would no longer hold and the report would refuse to print them."""
    moved = store.copy()
    tt = (moved["key"] == "tanh/tanh beta=0.5 alpha0=20 eta=1") & (moved["model"] == "srf")
    moved.loc[tt, "risk"] *= 0.95
    with pytest.raises(ValueError, match="claim does not hold"):
        report.notes(moved, aggregate(moved, first_reps=16), 2000, 16)


def test_a_false_claim_or_a_bad_expression_is_named():
    ctx = {"x": 1}
    assert render("x = {{x}}{{! x == 1 }}.", ctx) == "x = 1."
    assert render("{{= y = x + 1 }}y = {{y}}", ctx) == "y = 2"
    with pytest.raises(ValueError, match=r"claim does not hold: x > 1"):
        render("{{! x > 1 }}", ctx)
    with pytest.raises(ValueError, match="NameError"):
        render("{{ z }}", ctx)


def test_context_gap_is_the_mean_over_repetitions_of_the_relative_gap(store, aggregated):
    import numpy as np

    agg = aggregated(16)
    ctx = Context(store, agg, 2000, 16)
    key = "erf/relu beta=0.5 alpha0=20 eta=1"
    s = store[(store["key"] == key) & (store["model"] == "srf") & (store["d"] == 1000)]
    th = agg.drop_duplicates(["key", "alpha", "lam"]).set_index(["key", "alpha", "lam"])[
        "theory_srf"]
    rel = [(r.risk - th[(r.key, r.alpha, r.lam)]) / th[(r.key, r.alpha, r.lam)]
           for r in s.itertuples()]
    per_rep = np.array([np.mean([v for v, rep in zip(rel, s["rep"], strict=True) if rep == k])
                        for k in sorted(set(s["rep"]))])
    g = ctx.gap(key, "srf", 1000)
    assert g.n == len(per_rep) and g.mean == pytest.approx(per_rep.mean(), rel=1e-12)
    assert g.se == pytest.approx(per_rep.std(ddof=1) / np.sqrt(len(per_rep)), rel=1e-12)


def test_report_with_unsupported_notes_writes_nothing(store, tmp_path, monkeypatch):
    moved = store.copy()
    tt = (moved["key"] == "tanh/tanh beta=0.5 alpha0=20 eta=1") & (moved["model"] == "srf")
    moved.loc[tt, "risk"] *= 0.95
    path = tmp_path / "runs.csv"
    moved.to_csv(path, index=False)
    monkeypatch.setattr(report, "FIG_DIR", tmp_path / "figures")
    with pytest.raises(ValueError, match="report_notes_d2000.md: the numbers no longer support"):
        report.write_report(path, tmp_path / "REPORT.md", d=2000, seeds=16)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.csv"]
