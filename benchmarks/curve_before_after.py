"""Section 3 of ``bench_engine.py`` (the 100-alpha curves after three steps) on two checkouts in
one run: a worker process per checkout (``PYTHONPATH`` = that tree), driven alternately so that
both see the same load. Per setting (the default one, then the ``N_EXTRA`` drawn with
``--steps-seed``, default ``SEED``), ``--rounds`` rounds; a round times, in each tree in turn,
one sRF point (the reference: the best of ``bench_engine.srf_point``), the curve with the
mapping computed (every cache cleared) and the curve cached. Each figure is the best over the
rounds; ratios are to the same tree's reference. CPU time (``time.process_time``).

Run: ``python benchmarks/curve_before_after.py --old /path/to/old --new /path/to/new``
(``--rounds 3``, ``--steps-seed N``, ``--old-cache DIR`` / ``--new-cache DIR``: the
``NUMBA_CACHE_DIR`` of each tree's worker; ``--only 0,3``: those settings, 0 the default)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def worker() -> None:
    """Answer lines on stdin: ``ref``, ``curve I computed`` or ``curve I cached`` (I: the
    setting's index, 0 the default), each with the CPU seconds as one JSON line."""
    sys.path.insert(0, HERE)
    import bench_engine as B
    import numpy as np

    import asymptotics as A

    seed = int(sys.argv[sys.argv.index("--steps-seed") + 1])
    extra = [B.draw_steps_setting(np.random.default_rng([seed, i])) for i in range(B.N_EXTRA)]
    settings = [dict(B.STEPS_SETTING, readout="pm1")] + extra
    alphas = np.linspace(0.2, 5.0, 100)

    def curve(i: int):
        kw = dict(settings[i])
        ro = kw.pop("readout")
        return A.risk_curve(alphas, model="srf", steps=3, readout=ro, lam=0.01, **kw)

    for a in B.ALPHAS:
        A.risk(a, model="srf")
    for i in range(len(settings)):
        curve(i)  # (compiled kernels loaded, nothing timed)
    print(json.dumps({"ready": A.__file__, "n": len(settings)}), flush=True)
    for line in sys.stdin:
        words = line.split()
        if words[0] == "ref":
            t = B.srf_point()
        else:
            i, mode = int(words[1]), words[2]
            if mode == "computed":
                B._clear_steps_cache()
            t0 = time.process_time()
            curve(i)
            t = time.process_time() - t0
        print(json.dumps({"t": t}), flush=True)


def main() -> int:
    if {"-h", "--help"} & set(sys.argv[1:]):  # the usage is the docstring
        print(__doc__)
        return 0
    old = sys.argv[sys.argv.index("--old") + 1]
    new = sys.argv[sys.argv.index("--new") + 1]
    rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 3
    sys.path.insert(0, HERE)
    import bench_engine as B

    seed = (int(sys.argv[sys.argv.index("--steps-seed") + 1]) if "--steps-seed" in sys.argv
            else B.SEED)
    procs = {}
    caches = {"before": "--old-cache", "after": "--new-cache"}
    for name, root in (("before", old), ("after", new)):
        env = dict(os.environ, PYTHONPATH=os.path.abspath(root))
        if caches[name] in sys.argv:  # (numba's cache of that tree's kernels)
            env["NUMBA_CACHE_DIR"] = sys.argv[sys.argv.index(caches[name]) + 1]
        p = subprocess.Popen([sys.executable, __file__, "--worker", "--steps-seed", str(seed)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        head = json.loads(p.stdout.readline())
        procs[name] = p
        print(f"{name}: {head['ready']}", flush=True)
    n = head["n"]

    def ask(name: str, cmd: str) -> float:
        p = procs[name]
        p.stdin.write(cmd + "\n")
        p.stdin.flush()
        return json.loads(p.stdout.readline())["t"]

    print(f"section 3 curves, steps seed {seed}, best of {rounds} rounds, the trees alternating")
    summary = {name: ([], []) for name in procs}
    sums = {name: [0.0, 0.0] for name in procs}
    only = (range(n) if "--only" not in sys.argv else
            [int(x) for x in sys.argv[sys.argv.index("--only") + 1].split(",")])
    for i in only:
        best = {name: [float("inf")] * 3 for name in procs}
        for _ in range(rounds):
            for name in procs:
                for k, cmd in enumerate(("ref", f"curve {i} computed", f"curve {i} cached")):
                    best[name][k] = min(best[name][k], ask(name, cmd))
        what = "default (pm1)" if i == 0 else f"drawn {i - 1}"
        parts = []
        for name in procs:
            ref, comp, cach = best[name]
            summary[name][0].append(comp / ref)
            summary[name][1].append(cach / ref)
            sums[name][0] += comp
            sums[name][1] += cach
            parts.append(f"{name}: ref {ref * 1e3:.2f} ms, computed {comp * 1e3:.1f} ms = "
                         f"{comp / ref:.0f}x, cached {cach * 1e3:.1f} ms = {cach / ref:.0f}x")
        print(f"  {what}: " + "; ".join(parts), flush=True)
    for name in procs:
        comp, cach = summary[name]
        print(f"{name}: computed median {statistics.median(comp):.0f}x, largest {max(comp):.0f}x, "
              f"{sum(x <= 100 for x in comp)} of {len(comp)} <= 100x; cached median "
              f"{statistics.median(cach):.0f}x, largest {max(cach):.0f}x, "
              f"{sum(x <= 100 for x in cach)} of {len(cach)} <= 100x")
    (b0, b1), (a0, a1) = sums["before"], sums["after"]
    print(f"sum of the {len(only)} curves' times, before -> after: computed {b0 * 1e3:.0f} -> "
          f"{a0 * 1e3:.0f} ms ({(a0 / b0 - 1) * 100:+.1f}%), cached {b1 * 1e3:.0f} -> "
          f"{a1 * 1e3:.0f} ms ({(a1 / b1 - 1) * 100:+.1f}%)")
    for p in procs.values():
        p.stdin.close()
        p.wait()
    return 0


if __name__ == "__main__":
    if "--worker" in sys.argv:
        worker()
    else:
        sys.exit(main())
