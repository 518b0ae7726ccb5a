"""The top edge's guard (docs/THEORY.md §16.10, asymptotics/spectra/topguard.py) before
and after its batched points, interleaved: each round runs one process per source tree (the
trees alternate in order), each process builds the twelve sRF features laws of
bench_spectrum_srf.SETTINGS and the two network laws of bench_spectrum.SAME (one call to warm,
then ``--reps`` timed), CPU time (``time.process_time``) of the law and of the guard in it; then
the medians and the largest relative differences of the results (support edges, atom,
outliers). Run with one BLAS thread:
``python benchmarks/bench_top_guard.py OLD_TREE NEW_TREE [--rounds 3 --reps 3]``."""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def worker(reps: int) -> None:
    """One tree's laws: JSON lines (name, law s, guard s, the results)."""
    sys.path.insert(0, HERE)
    import asymptotics as A
    from asymptotics.spectra import branch

    try:
        from asymptotics.spectra import topguard as mod
    except ImportError:
        mod = branch
    from bench_spectrum import SAME
    from bench_spectrum_srf import SETTINGS

    spent = [0.0]
    inner = mod.guard

    def timed(*a, **k):
        t = time.process_time()
        try:
            return inner(*a, **k)
        finally:
            spent[0] += time.process_time() - t

    mod.guard = timed
    cases = []
    for i, (sigma, ro, alpha, alpha0, beta, d) in enumerate(SETTINGS):
        cases.append((f"srf {i}", alpha, dict(sigma=sigma, readout=ro, alpha0=alpha0,
                                              beta=beta, eta=1.0, target="tanh(z1)", steps=1,
                                              model="srf", d=d)))
    for name, (alpha, kw) in SAME.items():
        cases.append((f"net {name}", alpha, dict(kw, d=1000)))
    for name, alpha, kw in cases:
        A.spectrum("features", alpha, **kw)
        tl, tg = [], []
        for _ in range(reps):
            spent[0] = 0.0
            t = time.process_time()
            law = A.spectrum("features", alpha, **kw)
            tl.append(time.process_time() - t)
            tg.append(spent[0])
        out = dict(name=name, law=tl, guard=tg, support=[list(s) for s in law.support],
                   atom=law.atom, outliers=[o.location for o in law.outliers])
        print(json.dumps(out), flush=True)


def rel(a: float, b: float) -> float:
    if a == b or (math.isnan(a) and math.isnan(b)):
        return 0.0
    return abs(a - b) / max(abs(a), abs(b))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trees", nargs="*", help="the source trees, before then after")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--worker", action="store_true")
    args = ap.parse_args()
    if args.worker:
        worker(args.reps)
        return
    runs: dict = {t: {} for t in args.trees}
    for r in range(args.rounds):
        for tree in (args.trees if r % 2 == 0 else args.trees[::-1]):
            env = dict(os.environ, PYTHONPATH=tree,
                       NUMBA_CACHE_DIR=os.path.join(tree, ".numba_cache"))
            res = subprocess.run([sys.executable, __file__, "--worker", "--reps",
                                  str(args.reps)], env=env, capture_output=True, text=True,
                                 check=True, cwd=tree)
            for line in res.stdout.splitlines():
                row = json.loads(line)
                prev = runs[tree].setdefault(row["name"], row)
                if prev is not row:
                    prev["law"] += row["law"]
                    prev["guard"] += row["guard"]
            print(f"round {r} {tree} done", flush=True)
    old, new = (runs[t] for t in args.trees)

    def med(v: list) -> float:
        v = sorted(v)
        return 0.5 * (v[(len(v) - 1) // 2] + v[len(v) // 2])

    print("| law | law before / after ms | guard before / after ms | guard share before / "
          "after | max rel diff (edges, atom, outliers) |")
    print("|---|---|---|---|---|")
    for name in old:
        a, b = old[name], new[name]
        same = len(a["support"]) == len(b["support"]) and len(a["outliers"]) == len(
            b["outliers"])
        diff = max([rel(x, y) for s, t in zip(a["support"], b["support"], strict=False)
                    for x, y in zip(s, t, strict=True)]
                   + [rel(a["atom"], b["atom"])]
                   + [rel(x, y) for x, y in zip(a["outliers"], b["outliers"], strict=False)])
        la, lb, ga, gb = (med(v) for v in (a["law"], b["law"], a["guard"], b["guard"]))
        print(f"| {name} | {la * 1e3:.1f} / {lb * 1e3:.1f} | {ga * 1e3:.1f} / {gb * 1e3:.1f} | "
              f"{ga / la:.2f} / {gb / lb:.2f} | {diff:.1e}{'' if same else ' (COUNTS DIFFER)'} |")


if __name__ == "__main__":
    main()
