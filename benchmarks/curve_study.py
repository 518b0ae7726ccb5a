"""How accurate are the rows of a K-group curve whose kappa rule was decided by its probes
(docs/THEORY.md §10.8)? Curves of 40 alphas (evenly from 0.2 to 5) after T = 2 or 3 steps of
settings drawn as ``bench_engine.draw_steps_setting`` (seed ``SEED``; kept when the spike rank
is 2 or 3), lam = 0.01: every row against the same equations on a very fine rule (274 kappa
nodes per dimension at r = 2, 100 at r = 3) and, at r = 2, on a fine aligned rule (trapezoid step
0.02 along the sharpest loading, 100 Gauss-Hermite nodes on the other axis, docs/DERIVATIONS.md
§9.6: the reference where a sharp group leaves the tensor rules still converging); a row's
error is against the reference it is closer to.

Run: ``python -m benchmarks.curve_study [N]`` (prints one line per curve and a summary).
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import sys  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

from benchmarks.bench_engine import draw_steps_setting  # noqa: E402

SEED = 20261127
FINE = {2: 274, 3: 100}
FINE_ALIGNED = {2: (0.02, 100)}
TOL = 1e-3


def main() -> None:
    if {"-h", "--help"} & set(sys.argv[1:]):  # the usage is the docstring
        print(__doc__)
        return
    from asymptotics.multiindex.steps import steps_mapping
    from asymptotics.spiked.problem import spiked_builder
    from asymptotics.spiked.solve import risk_spiked, risk_spiked_curve, solve_spiked

    warnings.simplefilter("ignore")
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    rng = np.random.default_rng(SEED)
    alphas = np.linspace(0.2, 5.0, 40)
    worst, over, rows = [], 0, 0
    done = 0
    while done < n:
        s = draw_steps_setting(rng)
        T = int(rng.integers(2, 4))
        mp = steps_mapping(s["sigma"], s["target"], steps=T, alpha0=s["alpha0"], eta=s["eta"][:T],
                           readout=s["readout"])
        params = mp.spiked_params(T)
        r = int(np.shape(params["loadings"])[1])
        if r not in (2, 3):
            continue
        done += 1
        kw = dict(sigma=s["sigma"], lam=0.01, beta=1.0, **params)
        df = risk_spiked_curve(alphas, progress=False, **kw)
        errs, gap = [], 0.0
        aligned = spiked_builder(**kw)(FINE_ALIGNED[r], None) if r in FINE_ALIGNED else None
        for a, risk in zip(alphas, df.risk, strict=True):
            refs = [risk_spiked(a, n_kappa=FINE[r], **kw).risk]
            if aligned is not None:
                refs.append(solve_spiked(aligned, a).risk)
                gap = max(gap, abs(refs[0] - refs[1]) / abs(refs[1]))
            errs.append(min(abs(risk - ref) / abs(ref) for ref in refs))
        errs = np.array(errs)
        ok = np.isfinite(errs)
        over += int(np.sum(errs[ok] > TOL))
        rows += int(ok.sum())
        worst.append(np.nanmax(errs) if ok.any() else np.nan)
        one = df.n_kappa.nunique() == 1 and df.quadrature_change.nunique() == 1
        route = (f"one rule {df.n_kappa.iloc[0]} (probes), estimate "
                 f"{df.quadrature_change.iloc[0]:.1e}" if one else
                 f"a ladder per point (rules {sorted(set(df.n_kappa))})")
        print(f"T={T} r={r} {s}: {route}, converged {int(df.converged.sum())}/40, "
              f"largest error against {FINE[r]} nodes"
              f"{' or the fine aligned rule' if aligned is not None else ''} {worst[-1]:.1e}, "
              f"(the two references {gap:.1e} apart), median "
              f"{np.nanmedian(errs):.1e}, rows above {TOL:g}: {int(np.sum(errs[ok] > TOL))}",
              flush=True)
    print(f"{n} curves: {over} of {rows} converged rows above {TOL:g}; largest error per curve "
          f"{', '.join(f'{w:.1e}' for w in worst)}")


if __name__ == "__main__":
    main()
