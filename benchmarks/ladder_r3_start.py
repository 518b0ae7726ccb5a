"""The r = 3 kappa ladder against a candidate ladder, both against fixed fine rules.

For the drawn K-group settings of ``bench_engine.draw_setting`` with r = 3 (seeds ``--seeds``),
each at its drawn alpha and at alpha = 0.3 and 5: ``risk_spiked`` on the current ladder
(``asymptotics.equations.ladder.LADDER[3]``) and on ``--ladder`` (every cache cleared before
each, CPU time of each), and ``risk_spiked`` at a fixed ``n_kappa`` of 54 and 72 (the reference:
72; the 54-72 gap is its own accuracy). One JSON line per point on stdout; ``--analyse F...``
summarises such files: the largest and median change of the candidate's risks from the current
ones, both ladders' errors against the 72-node rule and the pairs of rules they settled on
(docs/THEORY.md §10.8). The CPU times are single first computations (a compile or a loaded
moment shows up): time the ladders by ``bench_engine.py --sections 1`` instead.

Run: ``python benchmarks/ladder_r3_start.py --seeds 35,43 --ladder 16,24,36,54,72 > F.jsonl``,
then ``python benchmarks/ladder_r3_start.py --analyse F.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run(seeds: list[int], candidate: tuple[int, ...]) -> None:
    """One JSON line per r = 3 point of the draws of ``seeds``."""
    import numpy as np

    sys.path.insert(0, str(HERE))
    import bench_engine as bench

    from asymptotics.equations import ladder
    from asymptotics.spiked import risk_spiked

    warnings.simplefilter("ignore")
    current = ladder.LADDER[3]
    for seed in seeds:
        rng = np.random.default_rng(seed)
        for i in range(bench.N_SETTINGS):
            alpha, kw = bench.draw_setting(rng)
            K, r = np.shape(kw["loadings"])
            if r != 3:
                continue
            for a in (alpha, 0.3, 5.0):
                row = dict(seed=seed, i=i, alpha=a, K=K, sigma=kw["sigma"], target=kw["target"])
                for name, lad in (("old", current), ("new", candidate)):
                    ladder.LADDER[3] = lad
                    try:
                        bench._clear_steps_cache()
                        t = time.process_time()
                        res = risk_spiked(a, **kw)
                        row[name] = dict(risk=res.risk, rule=res.n_kappa, conv=res.converged,
                                         err=res.quadrature_change,
                                         cpu=time.process_time() - t)
                    finally:
                        ladder.LADDER[3] = current
                for n in (54, 72):
                    res = risk_spiked(a, n_kappa=n, **kw)
                    row[f"fix{n}"] = res.risk if res.converged else math.nan
                print(json.dumps(row), flush=True)


def analyse(files: list[str]) -> None:
    """The summary of the JSON lines of ``files``."""
    rows = [json.loads(line) for f in files for line in Path(f).read_text().splitlines()
            if line.startswith("{")]
    change, e_old, e_new, rules, skipped = [], [], [], {}, 0
    for row in rows:
        old, new, ref = row["old"], row["new"], row["fix72"]
        if not (old["conv"] and new["conv"]) or math.isnan(ref):
            skipped += 1
            continue
        change.append(abs(new["risk"] - old["risk"]) / abs(old["risk"]))
        e_old.append(abs(old["risk"] - ref) / abs(ref))
        e_new.append(abs(new["risk"] - ref) / abs(ref))
        key = (old["rule"], new["rule"])
        rules[key] = rules.get(key, 0) + 1
    gaps = [abs(r["fix54"] - r["fix72"]) / abs(r["fix72"]) for r in rows
            if not math.isnan(r["fix54"]) and not math.isnan(r["fix72"])]
    worse = sum(b - a > 1e-10 for a, b in zip(e_old, e_new, strict=True))
    print(f"{len(change)} points of {len({(r['seed'], r['i']) for r in rows})} settings "
          f"({skipped} not converged on a ladder or the reference, left out)")
    print(f"candidate vs current ladder: largest relative change {max(change):.2e}, median "
          f"{statistics.median(change):.2e}")
    print(f"error against the 72-node rule (its gap to 54 nodes: largest {max(gaps):.1e}): "
          f"current largest {max(e_old):.2e}, median {statistics.median(e_old):.2e}; candidate "
          f"largest {max(e_new):.2e}, median {statistics.median(e_new):.2e}; candidate's error "
          f"above the current one's by > 1e-10 at {worse} points")
    print("rules settled on (current, candidate): points "
          + ", ".join(f"{a}->{b}: {c}" for (a, b), c in sorted(rules.items())))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="20261125")
    ap.add_argument("--ladder", default="16,24,36,54,72", help="the candidate r = 3 ladder")
    ap.add_argument("--analyse", nargs="+", help="summarise these JSON-lines files")
    args = ap.parse_args()
    if args.analyse:
        analyse(args.analyse)
    else:
        run([int(s) for s in args.seeds.split(",")],
            tuple(int(n) for n in args.ladder.split(",")))


if __name__ == "__main__":
    main()
