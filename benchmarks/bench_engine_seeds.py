"""Sections 1 and 2 of ``bench_engine.py`` over many draws: how often each target holds on
settings nobody chose.

``bench_engine.py --seed N`` draws 24 K-group settings (section 1) and ``--mapping-seed N`` 24
mappings after three steps (section 2) from fixed distributions; one seed is one draw. This
script runs a range of seeds, prints each seed's summary (the per-setting lines of a seed that
misses a target too) and then the tally:

* section 1: per seed the median and slowest ratio of each class (r <= 2, r = 3) to one sRF point
  measured beside it; the targets (median <= 3x for r <= 2, <= 15x for r = 3, slowest <= 3x
  the median of its class) and on how many seeds each held, naming the seeds where not;
* section 2: every drawn mapping's first computation (every cache cleared, best of 3); how
  many of them took <= 50 ms, and on how many seeds all of them did.

Times are CPU time, ratios measured in one run (``bench_engine.py``'s docstring).
``bench_mapping.py`` is the mapping alone, with its profiles and subsets of the draws.
Run: python benchmarks/bench_engine_seeds.py --sections 1,2 --seeds 1-32
(section 1 ~8 s a seed, section 2 ~40 s a seed on an idle machine)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import bench_engine as B  # noqa: E402  (sets the BLAS threads to one before numpy loads)

#: section 1's targets: (class, median bound)
MEDIAN_BOUND = {"r <= 2": 3.0, "r = 3": 15.0}
SPREAD_BOUND = 3.0
MAPPING_BOUND = 0.05


def seed_range(text: str) -> list[int]:
    """``"1-32"``, ``"1,5,9"`` or a mix (``"1-4,35"``) as a list of seeds."""
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        try:
            a = int(lo)
            b = int(hi) if hi else a
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"--seeds takes numbers and ranges like 1-32 or 1,5,9, got {text!r}") from None
        if b < a:
            raise argparse.ArgumentTypeError(f"--seeds: a range runs upwards, got {part!r}")
        out.extend(range(a, b + 1))
    return out


def section1(seeds: list[int]) -> None:
    misses: dict[str, list[int]] = {f"{c} {what}": [] for c in MEDIAN_BOUND
                                    for what in ("median", "spread")}
    for seed in seeds:
        lines: list[str] = []
        print(f"section 1, seed {seed}:", flush=True)
        stats = B.k_group_points(seed, say=lines.append)
        bad = False
        for name, (med, top) in stats.items():
            if med > MEDIAN_BOUND[name]:
                misses[f"{name} median"].append(seed)
                bad = True
            if top > SPREAD_BOUND * med:
                misses[f"{name} spread"].append(seed)
                bad = True
        if bad:  # the settings of a missed target, for whoever looks into it
            print("\n".join(lines), flush=True)
    print(f"\nsection 1 over {len(seeds)} seeds ({seeds[0]}..{seeds[-1]}):")
    for key, bad in misses.items():
        name, what = key.rsplit(" ", 1)
        goal = (f"median <= {MEDIAN_BOUND[name]:g}x" if what == "median"
                else f"slowest <= {SPREAD_BOUND:g}x the median")
        print(f"  {name}: {goal} on {len(seeds) - len(bad)} of {len(seeds)} seeds"
              + (f" (missed on seeds {', '.join(map(str, bad))})" if bad else ""))


def section2(seeds: list[int]) -> None:
    all_times, missed = [], []
    for seed in seeds:
        lines: list[str] = []
        print(f"section 2, seed {seed}:", flush=True)
        times = B.steps_mappings(seed, say=lines.append, default=False)
        all_times += times
        timed = [ln for ln in lines if ": first " in ln]  # a refusal prints no time
        slow = [ln for ln, t in zip(timed, times, strict=True) if t > MAPPING_BOUND]
        if slow:
            missed.append(seed)
            print("\n".join(slow), flush=True)
    ok = sum(t <= MAPPING_BOUND for t in all_times)
    print(f"\nsection 2 over {len(seeds)} seeds ({seeds[0]}..{seeds[-1]}): {ok} of "
          f"{len(all_times)} drawn mappings <= 50 ms (median "
          f"{statistics.median(all_times) * 1e3:.1f} ms, slowest {max(all_times) * 1e3:.1f} ms);"
          f" every mapping of a seed <= 50 ms on {len(seeds) - len(missed)} of {len(seeds)} seeds"
          + (f" (not on seeds {', '.join(map(str, missed))})" if missed else ""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sections", default="1,2", help="1, 2 or 1,2 (default: both)")
    ap.add_argument("--seeds", type=seed_range, default=seed_range("1-8"),
                    help="seeds to draw with: ranges and lists, e.g. 1-32 or 1-4,35 (default 1-8)")
    args = ap.parse_args()
    try:
        sections = {int(x) for x in args.sections.split(",")}
    except ValueError:
        ap.error(f"--sections takes 1, 2 or 1,2, got {args.sections!r}")
    if not sections or not sections <= {1, 2}:
        ap.error(f"--sections takes 1, 2 or 1,2, got {args.sections!r}")
    from asymptotics.core import coldstart

    print(f"GIANTSTEP_COLD_START mode: {coldstart.mode()}", flush=True)
    B.srf_point()  # the reference's paths warmed (each section re-measures it)
    if 1 in sections:
        section1(args.seeds)
    if 2 in sections:
        section2(args.seeds)


if __name__ == "__main__":
    main()
