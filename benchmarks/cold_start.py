"""Cold start: the first number on a fresh environment, as ratios to a trivial numba program.

Every figure is a fresh interpreter (``python -c ...`` / ``python -m ...``) with its own
``NUMBA_CACHE_DIR``; the reference and the project's commands run back to back in each round, so
the ratios are measured under the same load (the absolute seconds depend on the machine and on
what else runs on it). Per round:

(a) the trivial numba program: import numpy, scipy and numba, compile one tiny function
    (``cache=True``, into an empty cache directory);
(b) the first point, ``import asymptotics as A; A.risk(2.0).risk``, on an empty numba cache;
(c) the README's first command, ``python -m asymptotics curve --plot risk_curve.png --out
    risk_curve.csv`` (into a temporary directory), on an empty numba cache;
(d) (b) again with the cache (b) filled (warm);
(e) (c) again with the cache (c) filled (warm);
(f) (c) with the cache that (b) filled: the first point, then the README's command.

Prints a table: the median seconds over the rounds and the median over the rounds of each
figure's ratio to (a) of the same round. Targets (the issue): (b) <= 3x (a), (c) <= 4x (a).
Run: python benchmarks/cold_start.py [--rounds 3]   (about a minute a round on 2 busy cores)
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

TRIVIAL = ("import numpy, scipy, scipy.special, numba\n"
           "@numba.njit(cache=True)\n"
           "def f(x):\n"
           "    return x * 2.0 + 1.0\n"
           "print(f(1.0))\n")
FIRST_POINT = "import asymptotics as A; print(A.risk(2.0).risk)"
README = ["-m", "asymptotics", "curve", "--plot", "risk_curve.png", "--out", "risk_curve.csv"]
TARGETS = {"b": 3.0, "c": 4.0}
LABELS = {
    "a": "(a) trivial numba program, empty cache",
    "b": "(b) first point A.risk(2.0), empty cache",
    "c": "(c) README curve command, empty cache",
    "d": "(d) first point, warm cache",
    "e": "(e) README curve command, warm cache",
    "f": "(f) README command after (b) filled the cache",
}


def run(args: list[str], cache: str, cwd: str) -> tuple[float, str]:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, MPLBACKEND="Agg")
    t = time.perf_counter()
    out = subprocess.run([sys.executable, *args], env=env, cwd=cwd, capture_output=True,
                         text=True)
    dt = time.perf_counter() - t
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{out.stderr}")
    return dt, out.stderr


def one_round(scratch: str) -> tuple[dict[str, float], dict[str, str]]:
    times, stderr = {}, {}
    caches = {k: tempfile.mkdtemp(prefix=f"numba-{k}-", dir=scratch) for k in "abc"}
    work = tempfile.mkdtemp(prefix="work-", dir=scratch)
    trivial = os.path.join(work, "trivial_numba.py")  # cache=True needs a source file
    with open(trivial, "w") as fh:
        fh.write(TRIVIAL)
    times["a"], stderr["a"] = run([trivial], caches["a"], work)
    times["b"], stderr["b"] = run(["-c", FIRST_POINT], caches["b"], work)
    times["c"], stderr["c"] = run(README, caches["c"], work)
    times["d"], stderr["d"] = run(["-c", FIRST_POINT], caches["b"], work)
    times["e"], stderr["e"] = run(README, caches["c"], work)
    times["f"], stderr["f"] = run(README, caches["b"], work)
    for k in caches.values():
        shutil.rmtree(k, ignore_errors=True)
    return times, stderr


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--stderr", action="store_true",
                    help="print what (b) and (c) wrote on stderr in the last round")
    args = ap.parse_args()
    rows: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="cold-start-") as scratch:
        for i in range(args.rounds):
            times, stderr = one_round(scratch)
            rows.append(times)
            print(f"round {i + 1}: " + ", ".join(f"{k} {v:.2f} s" for k, v in times.items()),
                  file=sys.stderr, flush=True)
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores, {args.rounds} rounds "
          "(medians; each ratio is to (a) of the same round)")
    print("| figure | seconds | ratio to (a) | target |")
    print("|---|---|---|---|")
    for k, label in LABELS.items():
        sec = statistics.median(r[k] for r in rows)
        ratio = statistics.median(r[k] / r["a"] for r in rows)
        target = f"<= {TARGETS[k]:g}x" if k in TARGETS else ""
        print(f"| {label} | {sec:.2f} | {ratio:.2f}x | {target} |")
    if args.stderr:
        for k in "bc":
            print(f"\nstderr of {LABELS[k]}:\n{stderr[k]}", end="")


if __name__ == "__main__":
    main()
