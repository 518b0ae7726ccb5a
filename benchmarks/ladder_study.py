"""How honest is the kappa ladder's settle criterion? For drawn K-group points (r = 2, 3), the
risk on every rung of a fine ladder and on a very fine reference rule, so that any settle
criterion's reported value can be compared with the converged one (docs/THEORY.md §10.2).

Distribution (seed ``SEED``): half the points are K-group settings drawn as
``bench_engine.draw_setting`` (r redrawn uniform in {2, 3}), half are the groups after T giant
steps (T uniform in {2, 3}) of a setting drawn as ``bench_engine.draw_steps_setting`` (kept when
its spike rank r is 2 or 3) with lam from (0.01, 0.1), beta = 1; alpha log-uniform in [0.2, 5]
for both. Each rule is solved from a cold start at a fixed ``n_kappa``.

Criteria compared (``python -m benchmarks.ladder_study --analyse``, written to
``benchmarks/data/ladder_study.txt``): the first rule of a ladder where the estimate is at most
the tolerance 1e-3 is reported; "pair tol/f": f times the last relative change; "max2 tol": the
largest of the last two changes (three successive rules); "or pair tol/100": or 100 times the
last change (the criterion of ``asymptotics.spiked.solve``); the true error is the reported
value against the reference, over the points whose reference rules agree to tol/10.

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


TOL = 1e-3
LADDER_BEFORE = {2: (24, 36, 54, 81, 122), 3: (16, 24, 36, 54)}
LADDER_LOW = {2: (16, 24, 36, 54, 81, 122), 3: (10, 16, 24, 36, 54)}
LADDER_NOW = {2: (16, 24, 36, 54, 81, 122, 183), 3: (10, 16, 24, 36, 54, 72)}


def _pair(f: float):
    return lambda v, i: np.inf if i < 1 else f * abs(v[i] - v[i - 1]) / abs(v[i])


def _max2(v, i):
    return np.inf if i < 2 else max(abs(v[i] - v[i - 1]), abs(v[i - 1] - v[i - 2])) / abs(v[i])


def _max2_or_close(v, i):
    close = np.inf if i < 1 else 100.0 * abs(v[i] - v[i - 1]) / abs(v[i])
    return min(close, _max2(v, i))


CRITERIA = [("pair tol, 24.. (before)", _pair(1), LADDER_BEFORE),
            ("pair tol/2, 24..", _pair(2), LADDER_BEFORE),
            ("pair tol/4, 24..", _pair(4), LADDER_BEFORE),
            ("pair tol/2, 16..", _pair(2), LADDER_LOW),
            ("max2 tol, 16..122", _max2, LADDER_LOW),
            ("max2 tol, 16..183", _max2, LADDER_NOW),
            ("max2 tol or pair tol/100 (now)", _max2_or_close, LADDER_NOW)]


def analyse(files: list[Path]) -> str:
    """The table of the criteria (module docstring) over the points of ``files``."""
    import pandas as pd

    df = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
    out = []
    for _, p in df.iterrows():
        r = int(p.r)
        ref = p[f"n{REFERENCE[r][-1]}"]
        referr = abs(ref - p[f"n{REFERENCE[r][0]}"]) / abs(ref)
        for name, crit, ladders in CRITERIA:
            lad = ladders[r]
            v = [p[f"n{n}"] for n in lad]
            s = None
            for i in range(len(lad)):
                if not np.isfinite(v[i]):
                    break
                if crit(v, i) <= TOL:
                    s = i
                    break
            last = s if s is not None else len(lad) - 1
            out.append(dict(name=name, r=r, ok=s is not None, referr=referr,
                            err=abs(v[s] - ref) / abs(ref) if s is not None else np.nan,
                            cost=sum(n ** r for n in lad[:last + 1])))
    R = pd.DataFrame(out)
    acc = R[R.referr < TOL / 10]
    lines = [f"{len(df)} points ({', '.join(f.name for f in files)}); reference within tol/10 at "
             f"{len(acc) // len(CRITERIA)}; tolerance {TOL:g}",
             "criterion                       | settled | error > tol | largest error | mean nodes"]
    for name, g in acc.groupby("name", sort=False):
        s = g[g.ok]
        lines.append(f"{name:31s} | {len(s)}/{len(g)} | {int((s.err > TOL).sum())} "
                     f"({(s.err > TOL).mean():.1%}) | {s.err.max():.2g} | {g.cost.mean():.0f}")
    return "\n".join(lines)


def main() -> None:
    if {"-h", "--help"} & set(sys.argv[1:]):  # the usage is the docstring
        print(__doc__)
        return
    import pandas as pd

    if "--analyse" in sys.argv:
        files = [OUT, OUT.with_name("ladder_study_steps.csv")]
        text = "\n\n".join(analyse(f) for f in ([files[0]], [files[1]], files))
        OUT.with_suffix(".txt").write_text(text + "\n")
        print(text)
        return

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
