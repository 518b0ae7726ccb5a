"""Figure 6 — beyond one step, drawn from the data of the experiment modules.

- ``staircase``: overlaps with each target direction after every giant step for
  z1 + z1 z2 + z1 z2 z3, He2(z1) and z1 z2 z3 z4, as functions of d
  (Dandi et al. 2023; docs/THEORY.md §8);
- ``outliers``: measured vs predicted number of outlier singular values after two steps over the
  (a1, a2) grid, and a spectrum with its outliers (Moniri & Hassani 2026; docs/THEORY.md §8).

The data are cached by the experiments under ``validation/reports/data/``; run
``python -m figures.multistep_report`` / ``figures.spectra_report`` to recompute them.
"""

from __future__ import annotations

from pathlib import Path


def staircase(outdir: Path, quick: bool = False, refresh: bool = False) -> list[Path]:
    """Overlaps per step and their scaling with d: staircase, leap 2, leap 4 (Dandi et al. 2023)."""
    from .multistep_report import figure_staircase

    pngs = figure_staircase(outdir, quick)
    return [q for p in pngs for q in (p, p.with_suffix(".pdf"))]


def outliers(outdir: Path, quick: bool = False, refresh: bool = False) -> list[Path]:
    """Outlier counts after two steps, measured vs floor(a2/(1/2 - a1)) (Moniri & Hassani 2026)."""
    from .spectra_report import figure_phase_diagram, figure_spectrum

    pngs = figure_phase_diagram(outdir, quick) + figure_spectrum(outdir, quick)
    return [q for p in pngs for q in (p, p.with_suffix(".pdf"))]
