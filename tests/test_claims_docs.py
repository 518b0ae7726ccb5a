"""The numbers the README and the guide quote are the committed reports' numbers.

Each test parses the line of a report (regenerated from committed data by
``tests/test_reports.py``) and asserts the docs quote it as the report states it, so a report
regenerated with other counts fails here until the docs follow. Text is compared with its
whitespace collapsed (the docs wrap lines anywhere).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REPORTS = ROOT / "validation" / "reports"


def _text(*parts: str) -> str:
    return " ".join(ROOT.joinpath(*parts).read_text(encoding="utf-8").split())


def _search(pattern: str, text: str, what: str) -> re.Match[str]:
    m = re.search(pattern, text)
    assert m, f"{what}: the line the docs quote changed form ({pattern!r})"
    return m


def _guide_row(start: str) -> str:
    rows = [line for line in (ROOT / "docs" / "guide.md").read_text(encoding="utf-8").splitlines()
            if line.startswith(start)]
    assert len(rows) == 1, f"the guide's validation table has no single row {start!r}"
    return rows[0]


def _pct(value: str) -> str:
    """A report's percentage as the docs round it (one decimal)."""
    return f"{float(value):.1f}%"


def test_network_steps_counts_in_the_readme() -> None:
    report = _text("validation", "reports", "NETWORK_STEPS.md")
    m = _search(r"\*\*All points\*\*: network (\d+)/(\d+), surrogate (\d+)/\d+", report,
                "NETWORK_STEPS.md")
    net, n, srf = m.groups()
    readme = _text("README.md")
    assert (f"`validation/reports/NETWORK_STEPS.md`: {net} of {n} simulated points within "
            f"3 s.e., the surrogate {srf})") in readme


def test_steps_summary_in_the_readme_and_the_guide() -> None:
    report = _text("validation", "reports", "STEPS.md")
    m = _search(r"within 3 s\.e\. at (\d+) of (\d+) points, median \|gap\| ([\d.]+%), max "
                r"([\d.]+%); the sRF surrogate at (\d+) of \d+ \(p -> infinity; \d+ at p = d\), "
                r"median \|gap\| ([\d.]+%), max ([\d.]+%)", report, "STEPS.md")
    net, n, net_med, net_max, srf, srf_med, srf_max = m.groups()
    readme = _text("README.md")
    assert (f"Of the {n} points after 1–3 steps of `validation/reports/STEPS.md` the network "
            f"theory is within 3 s.e. at {net} (median gap {net_med}, largest {net_max}), the "
            f"surrogate at {srf} ({srf_med}, {srf_max})") in readme
    row = _guide_row("| several steps, risk")
    assert f"{srf} of {n} points after 1–3 steps within 3 s.e." in row
    assert f"the default: {net} of {n};" in row
    seeds = _search(r"Seeds per setting: (\d+) at d = 1000 \(F: (\d+)\); (\d+) at d = 2000",
                    report, "STEPS.md seeds")
    s1000, s_f, s2000 = seeds.groups()
    assert f"{s1000} seeds at d = 1000 (F: {s_f}), {s2000} at d = 2000" in row
    theory = _text("docs", "THEORY.md")
    assert (f"The risk after steps 1–3: {srf} of {n} points within 3 s.e., median |gap| {srf_med}, "
            f"max {srf_max}") in theory
    assert f"d = 1000 with {s1000} seeds (F: {s_f}) and d = 2000 with {s2000}" in theory


def test_matrix_network_share_in_the_readme_and_the_guide() -> None:
    report = _text("validation", "REPORT.md")
    net = _search(r"\| all but relu/he2 \(\d+\) \| network \| ([\d.]+)% \| ([\d.]+%) \| "
                  r"([\d.]+%) \|", report, "REPORT.md network row")
    share, med, largest = net.groups()
    srf = _search(r"\| all but relu/he2 \(\d+\) \| sRF \| ([\d.]+)% \|", report,
                  "REPORT.md sRF row").group(1)
    relu = _search(r"\| relu/he2 \(\d+\) \| network \| ([\d.]+)% \|", report,
                   "REPORT.md relu/he2 row").group(1)
    readme = _text("README.md")
    assert f"the network theory at {share}% of the d = 2000 points" in readme
    guide = _text("docs", "guide.md")
    assert (f"within 3 s.e. at {share}% of the points with `p=βd` (median gap {med}, largest "
            f"{largest}), against {round(float(srf))}% for the sRF theory") in guide
    row = _guide_row("| one step, network")
    assert f"{share}% within 3 s.e. except relu/He2 ({relu}%," in row


def test_matrix_srf_count_in_the_guide() -> None:
    report = _text("validation", "REPORT.md")
    m = _search(r"srf/rf points at s\.e\. ≤ 0\.002: (\d+), of which (\d+) with \|z\| > 3",
                report, "REPORT.md srf/rf count")
    total, misses = int(m.group(1)), int(m.group(2))
    row = _guide_row("| one step, sRF")
    assert f"{total - misses} of the {total} srf/rf points at s.e. ≤ 2e-3 within 3 s.e." in row


def test_finite_width_counts_in_the_guide() -> None:
    report = _text("validation", "reports", "FINITE_WIDTH.md")
    m = _search(r"Within 3 s\.e\.: finite-p theory (\d+)/(\d+), p = infinity theory (\d+)/\d+, "
                r"random features (\d+)/\d+", report, "FINITE_WIDTH.md")
    fin, n, inf, rf = m.groups()
    row = _guide_row("| finite width")
    assert f"{fin}/{n} within 3 s.e. ({inf}/{n} for p = ∞)" in row
    guide = _text("docs", "guide.md")
    assert f"{fin}/{n} designed sRF points within 3 s.e. against {inf}/{n} for p = ∞" in guide
    derivations = _text("docs", "DERIVATIONS.md")
    assert (f"{fin} of {n} points within 3 s.e. of the finite-p theory") in derivations
    assert f"{inf} of {n} for the p = ∞ theory" in derivations
    assert f"{rf} of {n} for random features" in derivations


def test_spiked_shares_in_the_guide() -> None:
    report = _text("validation", "reports", "SPIKED.md")
    inf = _search(r"\| p = infinity \| (\d+) \| \d+ \| ([\d.]+)% \|", report, "SPIKED.md p = inf")
    fin = _search(r"\| finite p \(the simulated width\) \| (\d+) \| \d+ \| ([\d.]+)% \|", report,
                  "SPIKED.md finite p")
    n = fin.group(1)
    row = _guide_row("| K groups, r spikes")
    assert f"{_pct(fin.group(2))} of {n} points within 3 s.e. at the simulated width" in row
    guide = _text("docs", "guide.md")
    assert (f"{n} points at d = 1000 with 16 seeds: {_pct(fin.group(2))} within 3 s.e. of the "
            f"theory at the simulated width ({_pct(inf.group(2))} for p = ∞;") in guide


def test_readouts_srf_count_in_the_guide() -> None:
    report = _text("validation", "reports", "READOUTS.md")
    m = _search(r"\| \*\*all\*\* \| \| srf \| (\d+)/(\d+) \|", report, "READOUTS.md srf row")
    row = _guide_row("| finite-support readout")
    assert f"the sRF model {m.group(1)}/{m.group(2)} within 3 s.e." in row


def test_reused_count_in_the_guide() -> None:
    report = _text("validation", "reports", "REUSED.md")
    m = _search(r"\*\*Within 3 s\.e\.: (\d+) of (\d+) points", report, "REUSED.md")
    gap = _search(r"vs [\d.]+ at eta_tilde = 2 \((-\d+)%", report, "REUSED.md eta_tilde = 2")
    row = _guide_row("| second step on the same batch")
    assert f"{m.group(1)} of {m.group(2)} points within 3 s.e. at eta_tilde = 1" in row
    assert f"({gap.group(1)}% on the update's overlap)" in row


def test_polynomial_spikes_range_in_the_readme() -> None:
    report = _text("validation", "reports", "POLYNOMIAL_SPIKES.md")
    m = _search(r"within [\d.]+ s\.e\. of the network in all (\d+) rows .*? while the d -> "
                r"infinity limit is ([\d.]+) to (\d+) s\.e\. away in the (\d+) rows outside",
                report, "POLYNOMIAL_SPIKES.md")
    rows, low, high, outside = m.groups()
    readme = _text("README.md")
    assert (f"({int(float(low))}–{high} s.e. away in {outside} of {rows} measured rows;"
            in readme)


def test_staircase_overlaps_in_theory() -> None:
    report = _text("validation", "reports", "MULTISTEP.md")
    m = _search(r"(\d+) of (\d+) learned entries within 3 s\.e\. \(max \|z\| = ([\d.]+)\)",
                report, "MULTISTEP.md")
    seeds = _search(r"\((\d+) per d; (\d+) for the staircase;", report, "MULTISTEP.md seeds")
    theory = _text("docs", "THEORY.md")
    assert (f"at d = 1024 ({seeds.group(2)} seeds) the six learned entries" in theory
            and m.group(1) == m.group(2) == "6")
    assert f"(max |z| {m.group(3)};" in theory


@pytest.mark.parametrize("doc", ["README.md", "docs/guide.md"])
def test_tutorial_count(doc: str) -> None:
    names = sorted(p.stem for p in (ROOT / "docs" / "tutorials").glob("[0-9][0-9]_*.py"))
    words = {5: "five", 6: "six", 7: "seven", 8: "eight"}
    text = _text(*doc.split("/"))
    said = re.findall(r"\b(five|six|seven|eight) executed tutorials", text)
    assert all(w == words.get(len(names)) for w in said), (said, names)
    if doc == "README.md":
        assert said, "the README no longer counts the tutorials"


def test_finite_width_largest_z_in_derivations() -> None:
    report = _text("validation", "reports", "FINITE_WIDTH.md")
    per_d = re.findall(r"d = (\d+) \(\d+ points, (\d+)–(\d+) seeds\): finite p \d+, p = infinity "
                       r"\d+, RF \d+; max \|z_p\| (\d+\.\d+)", report)
    assert len(per_d) == 3, per_d
    d_max, _, _, z_max = max(per_d, key=lambda row: float(row[3]))
    seeds = {row[1] for row in per_d} | {row[2] for row in per_d}
    derivations = _text("docs", "DERIVATIONS.md")
    assert f"(largest |z| {z_max}, at d = {d_max})" in derivations
    assert len(seeds) == 1 and f"d = 1000, 2000 and 4000 ({seeds.pop()} seeds)" in derivations


def test_student_quantiles_quoted() -> None:
    from scipy import stats

    readme = _text("README.md")
    m = _search(r"two-sided 1e-3, ([\d.]+) for (\d+) draws", readme, "README quantile")
    assert m.group(1) == f"{stats.t.ppf(1 - 5e-4, int(m.group(2)) - 1):.2f}"
    guide = _text("docs", "guide.md")
    m = _search(r"quantile of (\d+) degrees of freedom at a two-sided 1e-3 \(([\d.]+)\)", guide,
                "guide quantile")
    assert m.group(2) == f"{stats.t.ppf(1 - 5e-4, int(m.group(1))):.2f}"


def test_network_curve_ratio_in_the_guide() -> None:
    data = (ROOT / "benchmarks" / "data" / "bench_engine_network.txt").read_text(encoding="utf-8")
    blocks = re.findall(r"network / sRF curve over \d+ settings: median ([\d.]+x), largest "
                        r"([\d.]+x)", data)
    assert len(blocks) >= 3, blocks
    guide = _text("docs", "guide.md")
    (b_med, b_max), (a_med, a_max), (n_med, n_max) = blocks[0], blocks[1], blocks[-1]
    assert (f"`benchmarks/data/bench_engine_network.txt`: median {b_med}, largest {b_max}, then "
            f"{a_med} and {a_max}, and {n_med} and {n_max} on the merged code") in guide


def test_architecture_counts_the_theory_folders() -> None:
    folders = [d for d in (ROOT / "asymptotics").iterdir()
               if d.is_dir() and (d / "__init__.py").exists()]
    words = {10: "Ten", 11: "Eleven", 12: "Twelve", 13: "Thirteen", 14: "Fourteen"}
    arch = _text("docs", "ARCHITECTURE.md")
    assert f"{words[len(folders)]} folders, each with an `__init__.py`" in arch


def test_relu_he2_gap_over_d_in_the_guide() -> None:
    report = (ROOT / "validation" / "REPORT.md").read_text(encoding="utf-8")
    section = report.split("### relu/he2 over d", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\d+) \| \d+ \| \d+ \| (-?[\d.]+)% ± [\d.]+% \|$", section, re.M)
    assert len(rows) >= 2, rows
    (d_lo, gap_lo), (d_hi, gap_hi) = rows[0], rows[-1]
    guide = _text("docs", "guide.md")
    assert (f"shrinks from {round(abs(float(gap_lo)))}% at d = {d_lo} to "
            f"{round(abs(float(gap_hi)))}% at d = {d_hi}") in guide


def test_network_steps_counts_in_theory_section_15() -> None:
    report = _text("validation", "reports", "NETWORK_STEPS.md")
    m = _search(r"\*\*d = 2000\*\*: network theory within 3 s\.e\. at (\d+)/(\d+) points, "
                r"surrogate (\d+)/\d+\. \*\*All points\*\*: network (\d+)/(\d+), surrogate "
                r"(\d+)/\d+", report, "NETWORK_STEPS.md")
    net2000, n2000, srf2000, net_all, n_all, _ = (int(g) for g in m.groups())
    theory = _text("docs", "THEORY.md")
    assert (f"All d = 2000 points: {net2000}/{n2000} ({round(100 * net2000 / n2000)}%) against "
            f"{srf2000}/{n2000} ({round(100 * srf2000 / n2000)}%)") in theory
    assert f"all points {net_all}/{n_all} (" in theory
    row = r"\| steps \(STEPS\.md\) \| {d} \| \d+ \| (\d+)/(\d+) \| [^|]+ \| (\d+)/\d+ \|"
    steps = _search(row.format(d=1000) + ".*?" + row.format(d=2000), report,
                    "NETWORK_STEPS.md steps rows")
    n1000, n, s1000, n2000_steps, _, s2000 = steps.groups()
    assert (f"network {int(n1000) + int(n2000_steps)}/{2 * int(n)}, surrogate "
            f"{int(s1000) + int(s2000)}/{2 * int(n)} (d = 1000: {n1000}/{n} against {s1000}/{n}; "
            f"d = 2000: {n2000_steps}/{n} against {s2000}/{n};") in theory


def test_readme_speed_figures_are_the_committed_benchmark_outputs():
    readme = (ROOT / "README.md").read_text()
    text = " ".join(readme.split())
    theory = (ROOT / "benchmarks" / "data" / "bench_theory.txt").read_text()
    curves = [float(x) for x in re.findall(r"100-point curve beta=\S+: compiled +([\d.]+) ms",
                                           theory)]
    ratios = [float(x) for x in re.findall(r"100-point curve .* ratio +([\d.]+)x", theory)]
    grids = [float(x) for x in re.findall(r"50 x 50 \(alpha, eta\) grid: compiled ([\d.]+) s",
                                          theory)]
    cold = [float(x) for x in re.findall(r"cold start .*?: ([\d.]+) s \(target", theory)]
    assert curves and ratios and grids and cold
    assert "curve of 100 points takes 4–6 ms" in text and 3.5 <= min(curves) <= max(curves) < 6.5
    assert "grid 0.13–0.2 s" in text and 0.125 <= min(grids) <= max(grids) < 0.205
    assert "(curves 15–19× faster" in text and 15 <= min(ratios) <= max(ratios) < 20
    assert "import and a first point take under a second" in text and cold[-1] < 1.0
    net = (ROOT / "benchmarks" / "data" / "bench_network_theory.txt").read_text()
    rows = re.findall(r"^\| \S+ \S+ \S+ \| ([\d.]+) ms \| ([\d.]+) ms \| [\d.]+x \| .* \| "
                      r"([\d.]+) ms \| ([\d.]+)x \|$", net, re.M)
    assert rows
    extra = [float(first) - float(srf) for srf, first, _, _ in rows]
    cached = [float(r) for *_, r in rows]
    assert "costs 0.9–1.3× an sRF point, plus 2–4.5 ms once per setting" in text
    assert 0.9 <= min(cached) <= max(cached) <= 1.3 and 2.0 <= min(extra) <= max(extra) <= 4.5


def test_guide_repetition_time_is_the_committed_runs():
    import pandas as pd

    runs = pd.read_csv(ROOT / "validation" / "reports" / "data" / "multistep_risk.csv")
    s = runs.loc[runs.d == 1000, "seconds"]
    text = " ".join((ROOT / "docs" / "guide.md").read_text().split())
    claim = (f"took {s.min():.0f}–{s.max():.0f} s (median {s.median():.0f} s) of wall-clock in "
             "the committed runs")
    assert claim in text


def test_spectra_theory_counts_in_the_guide_and_theory() -> None:
    """SPECTRA_THEORY.md's summary (bulk cells, outlier locations, overlaps, the sRF surrogate
    beside the network's law after two steps) as the guide's row and THEORY.md §16.4 quote it."""
    report = _text("validation", "reports", "SPECTRA_THEORY.md")
    bulk = _search(r"- Bulk: worst Kolmogorov distance over all draws [\d.]+ \((\d+) of (\d+) "
                   r"cells with every draw <= 0\.02\)", report, "SPECTRA_THEORY.md").groups()
    locs = _search(r"- Outlier locations: (\d+) of (\d+) within 3 s\.e\.", report,
                   "SPECTRA_THEORY.md").groups()
    ovl = _search(r"- Overlaps: (\d+) of (\d+) within 3 s\.e\. \(largest \|z\| ([\d.]+)\)",
                  report, "SPECTRA_THEORY.md").groups()
    side = _search(r"- Beside it, not counted above: network, two steps, the features' `srf` "
                   r"law .*?; overlaps (\d+) of (\d+)", report, "SPECTRA_THEORY.md").groups()
    row = " ".join(_guide_row("| predicted spectra ").split())
    assert f"bulk Kolmogorov distance ≤ 0.02 in {bulk[0]} of {bulk[1]} cells" in row
    assert f"outlier locations {locs[0]}/{locs[1]} within 3 s.e." in row
    assert f"overlaps {ovl[0]}/{ovl[1]} (" in row
    assert f"kept beside it and not counted, {side[0]}/{side[1]}" in row
    theory = _text("docs", "THEORY.md")
    assert (f"**Outliers.** {locs[0]} of {locs[1]} predicted locations within 3 s.e."
            in theory)
    assert f"**Overlaps.** {ovl[0]} of {ovl[1]} within 3 s.e. (largest |z| {ovl[2]};" in theory
