"""Risk against the number of giant steps: the network theory of K groups (docs/THEORY.md §15,
solid, at p = d) and the sRF surrogate (§12, dashed, p -> infinity) against the trained
network's test error (Monte Carlo of the protocol, ``validation/reports/data/multistep_risk.csv``)
for ``z1 + z1 z2`` (pm1 against the one-spike constant readout) and the staircase
``z1 + z1 z2 + z1 z2 z3``, with the groups' loadings on each target direction.
``python -m figures steps``; the report beside it is ``python -m
validation.multistep.theory`` (``validation/reports/STEPS.md``)."""

from __future__ import annotations

from pathlib import Path

DESCRIPTION = ("Risk vs the number of giant steps: the network theory (solid), the sRF surrogate "
               "(dashed) and the trained network")


def make(outdir: Path, quick: bool = False, refresh: bool = False) -> list[Path]:
    """The figure of the committed runs (no simulation; ``quick`` and ``refresh`` change
    nothing: the Monte Carlo is ``python -m validation.multistep.risk``) as
    ``steps.png`` and ``steps.pdf`` in ``outdir``."""
    import pandas as pd

    from asymptotics.cli.common import save_figure
    from validation.multistep.theory import DATA, figure, with_theory

    if not DATA.exists():
        raise RuntimeError("no several-steps runs: run `python -m "
                           "validation.multistep.risk` first")
    runs = pd.read_csv(DATA)
    runs = runs[runs.setting.isin(["A", "B", "D"])]
    fig = figure(with_theory(runs), runs)
    outdir = Path(outdir)
    return [save_figure(fig, outdir / f"steps.{ext}", dpi=150) for ext in ("png", "pdf")]
