"""K-group points of two checkouts compared on drawn settings (the numbers must not move when
the engine is made faster).

The settings are those of ``bench_engine.draw_setting`` (section 1 of the engine benchmark):
``--draws`` draws of ``--settings`` settings each (seeds ``bench_engine.SEED``, ``SEED + 1``, ...,
or those of ``--seeds 35,40``),
each solved by ``risk_spiked`` at its drawn alpha and at alpha = 0.3 and 5. Each checkout runs in
its own process (``PYTHONPATH`` = the checkout) and writes its points as JSON; the comparison
prints the largest relative risk difference, the largest state difference relative to the state's
largest entry, and every point whose convergence, status, kappa rule or NaN pattern differs or
whose risk moved by more than ``--rtol``.

Run: ``python benchmarks/compare_kgroup_points.py --reference /path/to/other/checkout``
(``--candidate``: default this checkout; ``GIANTSTEP_COLD_START=compile`` recommended).
Exit status 1 if any point differs beyond the tolerance.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ALPHAS_EXTRA = (0.3, 5.0)


def dump(out: str, seeds: list[int], n_settings: int) -> None:
    """Solve every drawn setting with the ``asymptotics`` on ``sys.path``; write JSON to ``out``."""
    import warnings

    import numpy as np

    sys.path.insert(0, str(HERE))
    import bench_engine as bench

    from asymptotics.spiked import risk_spiked

    warnings.simplefilter("ignore")
    rows = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        for i in range(n_settings):
            alpha, kw = bench.draw_setting(rng)
            for a in (alpha, *ALPHAS_EXTRA):
                res = risk_spiked(a, **kw)
                rows.append(dict(seed=seed, i=i, alpha=a, risk=res.risk,
                                 converged=res.converged, status=res.status,
                                 n_kappa=res.n_kappa, state=list(res.state)))
    Path(out).write_text(json.dumps(rows))


def compare(ref: list[dict], new: list[dict], rtol: float) -> int:
    import numpy as np

    if len(ref) != len(new):
        print(f"different numbers of points: {len(ref)} and {len(new)}")
        return 1
    worst, worst_state, bad, same = 0.0, 0.0, [], 0
    for x, y in zip(ref, new, strict=True):
        key = f"seed {x['seed']} setting {x['i']} alpha {x['alpha']:g}"
        for f in ("converged", "status", "n_kappa"):
            if x[f] != y[f]:
                bad.append(f"{key}: {f} {x[f]} -> {y[f]}")
        if math.isnan(x["risk"]) != math.isnan(y["risk"]):
            bad.append(f"{key}: risk {x['risk']} -> {y['risk']}")
        elif not math.isnan(x["risk"]):
            d = abs(x["risk"] - y["risk"]) / abs(x["risk"])
            worst = max(worst, d)
            same += x["risk"] == y["risk"]
            if d > rtol:
                bad.append(f"{key}: risk {x['risk']!r} -> {y['risk']!r} ({d:.2g} relative)")
        else:
            same += 1
        sa, sb = np.array(x["state"], dtype=float), np.array(y["state"], dtype=float)
        if sa.shape != sb.shape or np.any(np.isfinite(sa) != np.isfinite(sb)):
            bad.append(f"{key}: the state's NaN pattern differs")
            continue
        ok = np.isfinite(sa)
        if ok.any():
            big = max(float(np.max(np.abs(sa[ok]))), 1e-300)
            worst_state = max(worst_state, float(np.max(np.abs(sa[ok] - sb[ok]))) / big)
    conv = sum(1 for x in ref if x["converged"])
    print(f"{len(ref)} points ({conv} converged): largest relative risk difference {worst:.3g}, "
          f"largest state difference {worst_state:.3g} of the state's largest entry; "
          f"{same} risks identical")
    for line in bad:
        print("DIFFERS:", line)
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference", required=True, help="the checkout to compare against")
    ap.add_argument("--candidate", default=str(HERE.parent), help="default: this checkout")
    ap.add_argument("--draws", type=int, default=3)
    ap.add_argument("--seeds", help="comma-separated seeds of the draws (default: SEED, SEED + 1, "
                    "... , --draws of them)")
    ap.add_argument("--settings", type=int, default=24)
    ap.add_argument("--rtol", type=float, default=1e-12)
    ap.add_argument("--dump", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.seeds:
        seeds = [int(x) for x in a.seeds.split(",")]
    else:
        sys.path.insert(0, str(HERE))
        from bench_engine import SEED

        seeds = [SEED + d for d in range(a.draws)]
    if a.dump:
        dump(a.dump, seeds, a.settings)
        return 0
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, root in (("reference", a.reference), ("candidate", a.candidate)):
            path = os.path.join(tmp, f"{name}.json")
            env = dict(os.environ, PYTHONPATH=str(Path(root).resolve()))
            subprocess.run([sys.executable, __file__, "--reference", root, "--dump", path,
                            "--seeds", ",".join(map(str, seeds)), "--settings", str(a.settings)],
                           env=env, check=True)
            out.append(json.loads(Path(path).read_text()))
    return compare(out[0], out[1], a.rtol)


if __name__ == "__main__":
    sys.exit(main())
