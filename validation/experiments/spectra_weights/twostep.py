"""The count of W2's outliers predicted at the simulated d for the phase diagram of
validation/reports/SPECTRA.md (section 2): :func:`asymptotics.spectra.twostep.two_step_weights`
at every (d, a1, a2) of the grid, with the experiments' protocol (sigma = tanh(z+0.5), target
z1, Gaussian readout, eta_tilde = (1, 3), beta = 1/2, alpha0 = 1). No simulation: the theory
alone (~1-2 s a point). ``python -m validation.experiments.spectra_weights.twostep [--quiet]``
writes ``validation/reports/data/spectra_grid_theory.csv`` (whole, atomically); the report
(``python -m figures.spectra_report``) reads it."""

from __future__ import annotations

import math
import os
import sys
import time

import pandas as pd

from validation.experiments.spectra import (
    ALPHA0,
    BETA,
    ETA1,
    ETA2,
    REPORTS,
    SIGMA,
    plan_for,
)

CSV = REPORTS / "data" / "spectra_grid_theory.csv"
COMMAND = "python -m validation.experiments.spectra_weights.twostep"
TOP = 4  # predicted singular values recorded per point
TARGET = "linear"  # the target z1 as a function of the teacher coordinate


def predict(d: int, a1: float, a2: float) -> dict:
    """One grid point: the count beyond the leading outlier at d, the bulk edge and detection
    threshold (singular values), the top predicted singular values, their readout degrees and
    the squared overlaps of their right vectors with theta."""
    from asymptotics.spectra.twostep import two_step_weights

    t0 = time.perf_counter()
    r = two_step_weights(SIGMA, TARGET, a1=a1, a2=a2, d=d, eta1=ETA1, eta2=ETA2, beta=BETA,
                         alpha0=ALPHA0)
    row = dict(d=d, a1=a1, a2=a2, predicted_at_d=r.count, edge=r.edge, threshold=r.threshold,
               n_outliers=len(r.outliers))
    for i in range(TOP):
        row[f"sv{i + 1}"] = r.outliers[i] if i < len(r.outliers) else math.nan
        row[f"deg{i + 1}"] = r.degrees[i] if i < len(r.outliers) else math.nan
        row[f"theta{i + 1}"] = r.theta_overlaps[i] if i < len(r.outliers) else math.nan
    row["seconds"] = time.perf_counter() - t0
    return row


def rows(quiet: bool = False) -> list[dict]:
    """Every (d, a1, a2) of the committed plan's grid."""
    from asymptotics.core.progress import Progress

    plan = plan_for(False)
    pts = [(d, a1, a2) for d in plan.grid_ds for a1 in plan.a1s for a2 in plan.a2s]
    out = []
    with Progress(len(pts), "two-step weights at d", unit="points", enabled=not quiet) as bar:
        for pt in bar.iter(pts):
            out.append(predict(*pt))
    return out


def load() -> pd.DataFrame | None:
    """The committed predictions, or None."""
    return pd.read_csv(CSV) if CSV.exists() else None


def main(argv: list[str] | None = None) -> int:
    from asymptotics.cli.common import Parser, add_quiet, apply_quiet

    text = " ".join(__doc__.split(". No simulation")[0].split()) + "."
    parser = Parser(prog=COMMAND, description=text)
    add_quiet(parser)
    args = parser.parse_args(argv)
    quiet = apply_quiet(args)
    df = pd.DataFrame(rows(quiet=quiet))
    tmp = CSV.with_name(CSV.name + ".tmp")
    df.to_csv(tmp, index=False, float_format="%.10g")
    os.replace(tmp, CSV)
    print(f"wrote {CSV}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
