"""The several-steps mapping alone: ``bench_engine.py``'s section 2 draws on several seeds.

For each seed, ``N`` settings (default 24) drawn by ``bench_engine.draw_mapping_setting`` (the
same draws as ``bench_engine.py --sections 2 --mapping-seed SEED``), each ``steps_mapping``
(T = 3) timed with every cache cleared, best of 3 (``--repeat``), CPU time
(``time.process_time``); then per seed and over all seeds the count within 50 ms, the median
and the slowest.

    python benchmarks/bench_mapping.py --seeds 1111,2222,4444
    python benchmarks/bench_mapping.py --seeds 8086 --only softplus3   # softplus, three values
    python benchmarks/bench_mapping.py --seeds 8086 --only softplus3 --profile   # cProfile each
    python benchmarks/bench_mapping.py --seeds 4444,5555 --only relu --repeat 5   # relu settings
    python benchmarks/bench_mapping.py --seeds 9090 --only relu --relu-default-lattice

``--relu-default-lattice`` clears ``multiindex.graded.RELU_TARGET_GRADED`` (relu sigma and relu
target on the default lattice, the former rule; by default the graded one, docs/THEORY.md §12.4).
"""

from __future__ import annotations

import os

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

GOAL = 0.05


def clear() -> None:
    """Every cache a first computation would not have (as bench_engine's section 2)."""
    from asymptotics.coefficients import line_moments
    from asymptotics.multiindex import steps
    from asymptotics.spiked import problem

    for mod in (steps, line_moments, problem):
        mod.clear_cache()


def run(kw: dict) -> object:
    import asymptotics as A

    return A.steps_mapping(kw["sigma"], kw["target"], steps=3, alpha0=kw["alpha0"],
                           eta=kw["eta"], readout=kw["readout"])


def first(kw: dict, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        clear()
        t = time.process_time()
        run(kw)
        times.append(time.process_time() - t)
    return min(times)


def main() -> None:
    from bench_engine import draw_mapping_setting

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="20261125", help="comma-separated seeds")
    ap.add_argument("--n", type=int, default=24, help="settings per seed")
    ap.add_argument("--only", choices=("softplus3", "relu"), default=None,
                    help="softplus3: softplus with a three-valued readout only; relu: relu as "
                         "sigma or as target only")
    ap.add_argument("--profile", action="store_true", help="cProfile each timed setting")
    ap.add_argument("--repeat", type=int, default=3, help="timings per setting (the best)")
    ap.add_argument("--relu-default-lattice", action="store_true",
                    help="relu sigma and relu target on the default lattice (the former rule)")
    args = ap.parse_args()
    import asymptotics as A
    from asymptotics.multiindex import graded

    graded.RELU_TARGET_GRADED = not args.relu_default_lattice

    A.steps_mapping("softplus", "tanh", steps=1, alpha0=4.0, eta=1.0)  # imports, kernels
    every = []
    for seed in (int(s) for s in args.seeds.split(",")):
        rng = np.random.default_rng(seed)
        times = []
        for i in range(args.n):
            kw = draw_mapping_setting(rng)
            if args.only == "softplus3" and not (kw["sigma"] == "softplus"
                                                 and isinstance(kw["readout"], dict)):
                continue
            if args.only == "relu" and "relu" not in (kw["sigma"], kw["target"]):
                continue
            try:
                t = first(kw, args.repeat)
            except ValueError as exc:
                print(f"  seed {seed} drawn {i:2d}: {kw}: refused: {exc}")
                continue
            times.append(t)
            print(f"  seed {seed} drawn {i:2d}: {kw}: first {t * 1e3:7.1f} ms", flush=True)
            if args.profile:
                import cProfile
                import pstats

                clear()
                pr = cProfile.Profile()
                pr.enable()
                run(kw)
                pr.disable()
                pstats.Stats(pr).sort_stats("tottime").print_stats(14)
        every += times
        if times:
            print(f"seed {seed}: {len(times)} settings, median "
                  f"{statistics.median(times) * 1e3:.1f} ms, slowest {max(times) * 1e3:.1f} ms, "
                  f"{sum(t <= GOAL for t in times)} of {len(times)} <= 50 ms", flush=True)
    if every:
        print(f"all seeds: {len(every)} settings, median {statistics.median(every) * 1e3:.1f} ms, "
              f"slowest {max(every) * 1e3:.1f} ms, {sum(t <= GOAL for t in every)} of "
              f"{len(every)} <= 50 ms")


if __name__ == "__main__":
    main()
