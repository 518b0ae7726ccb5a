"""How honest is the kappa ladder's settle criterion? For drawn K-group points (r = 2, 3), the
risk on every rung of a fine ladder and on a very fine reference rule, so that any settle
criterion's reported value can be compared with the converged one (docs/THEORY.md §10.2).

Distribution (seed ``SEED``): half the points are K-group settings drawn as
``bench_engine.draw_setting`` (r redrawn uniform in {2, 3}), half are the groups after T giant
steps (T uniform in {2, 3}) of a setting drawn as ``bench_engine.draw_steps_setting`` (kept when
its spike rank r is 2 or 3) with lam from (0.01, 0.1), beta = 1; alpha log-uniform in [0.2, 5]
for both. Each rule is solved from a cold start at a fixed ``n_kappa``.

Run: ``python -m benchmarks.ladder_study [N]`` (writes ``benchmarks/data/ladder_study.csv``);
``--steps``: steps points only (seed ``[SEED, 1]``; ``ladder_study_steps.csv``), the regime where
the rules converge slowly.
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks.bench_engine import draw_setting, draw_steps_setting  # noqa: E402

SEED = 20261126
#: the rules solved (nodes per kappa dimension) and the reference rules (the last is the
#: "true" value, the one before it measures the reference's own error)
RULES = {2: (16, 24, 36, 54, 81, 122, 183), 3: (10, 16, 24, 36, 54, 72)}
REFERENCE = {2: (228, 274), 3: (90, 100)}
OUT = Path(__file__).parent / "data" / "ladder_study.csv"


def draw_point(rng: np.random.Generator, i: int, only_steps: bool = False
               ) -> tuple[float, dict, dict]:
    """(alpha, risk_spiked keyword arguments, description); ``only_steps``: a steps point."""
    from asymptotics.multiindex.steps import steps_mapping

    alpha = float(np.exp(rng.uniform(np.log(0.2), np.log(5.0))))
    if i % 2 == 0 and not only_steps:
        while True:
            _, kw = draw_setting(rng)
            if np.shape(kw["loadings"])[1] >= 2:
                return alpha, kw, dict(kind="groups")
    while True:
        s = draw_steps_setting(rng)
        T = int(rng.integers(2, 4))
        lam = float(rng.choice([0.01, 0.1]))
        mp = steps_mapping(s["sigma"], s["target"], steps=T, alpha0=s["alpha0"], eta=s["eta"][:T],
                           readout=s["readout"])
        params = mp.spiked_params(T)
        if np.shape(params["loadings"])[1] in (2, 3):
            desc = dict(kind="steps", T=T, **{k: s[k] for k in ("readout", "alpha0")},
                        eta=list(s["eta"][:T]))
            return alpha, dict(sigma=s["sigma"], lam=lam, beta=1.0, **params), desc


def main() -> None:
    import pandas as pd

    from asymptotics.spiked.solve import risk_spiked

    warnings.simplefilter("ignore")
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    only_steps = "--steps" in sys.argv
    rng = np.random.default_rng([SEED, 1] if only_steps else SEED)
    out = OUT.with_name("ladder_study_steps.csv") if only_steps else OUT
    rows = []
    for i in range(n):
        alpha, kw, desc = draw_point(rng, i, only_steps)
        r = int(np.shape(kw["loadings"])[1])
        row = dict(i=i, alpha=alpha, r=r, K=int(np.shape(kw["loadings"])[0]),
                   sigma=str(kw["sigma"]), target=str(kw["target"]), lam=kw["lam"],
                   beta=kw["beta"], setting=json.dumps(desc))
        t0 = time.process_time()
        for nk in RULES[r] + REFERENCE[r]:
            res = risk_spiked(alpha, n_kappa=nk, **kw)
            row[f"n{nk}"] = res.risk if res.converged else np.nan
        row["seconds"] = time.process_time() - t0
        rows.append(row)
        print(i, r, row["K"], desc["kind"], f"{alpha:.3g}", f"{row['seconds']:.1f}s",
              [f"{row[f'n{nk}']:.6g}" for nk in RULES[r] + REFERENCE[r]], flush=True)
        pd.DataFrame(rows).to_csv(out, index=False)


if __name__ == "__main__":
    main()
