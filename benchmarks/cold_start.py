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
(f) (c) with the cache that (b) filled: the first point, then the README's command;
(b'), (c') from the start of (b), (c) until the background compiler that run started (asymptotics.
    core.coldstart: on an empty cache the kernels run interpreted while a detached process
    compiles them) has filled the cache; the next figure starts only then, so no figure runs
    beside another's compiler. Before that module existed, (b') = (b).

Prints a table: the median seconds over the rounds and the median over the rounds of each
figure's ratio to (a) of the same round. Targets: (b) <= 3x (a), (c) <= 4x (a).
Run: python benchmarks/cold_start.py --first-point [--rounds 3]   (about a minute a round)

``--routes`` (the default): every route of the theory (:data:`ROUTES`: the one-spike sRF point,
the network curve, K = 3 groups with r = 1, 2, 3 learned directions, three steps, three steps
with the pm1 readout), each on its own empty cache in the default mode: three processes started
one after the other (the next when the previous exits, without waiting for the background
compiler), each timing the calls after the first (the median of calls 2, 3, 4: one call on 2
shared cores is noisy); then the wait until the background compiler has finished, and the same
timing in numba's own mode on the filled cache (the route's compiled speed). Printed as ratios
to a compiled one-spike sRF point (the second call of the sRF route in a process on a warm
cache) measured in the same run.
Run: python benchmarks/cold_start.py   (a few minutes a route on 2 busy cores)
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
    "bg_b": "(b') until (b)'s background compilation has filled the cache",
    "bg_c": "(c') until (c)'s background compilation has filled the cache",
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


def wait_background(cache: str, t0: float) -> float:
    """Wait for the background compiler a cold run started in ``cache`` (asymptotics.core.
    coldstart: queued jobs, or a process holding the queue's lock); returns the seconds from
    ``t0`` until it is done."""
    from asymptotics.core import compile_queue

    spool = os.path.join(cache, compile_queue.SPOOL)
    while os.path.isdir(spool) and compile_queue.pending(spool):
        time.sleep(0.5)
    return time.perf_counter() - t0


def one_round(scratch: str) -> tuple[dict[str, float], dict[str, str]]:
    times, stderr = {}, {}
    caches = {k: tempfile.mkdtemp(prefix=f"numba-{k}-", dir=scratch) for k in "abc"}
    work = tempfile.mkdtemp(prefix="work-", dir=scratch)
    trivial = os.path.join(work, "trivial_numba.py")  # cache=True needs a source file
    with open(trivial, "w") as fh:
        fh.write(TRIVIAL)
    times["a"], stderr["a"] = run([trivial], caches["a"], work)
    t0 = time.perf_counter()
    times["b"], stderr["b"] = run(["-c", FIRST_POINT], caches["b"], work)
    times["bg_b"] = wait_background(caches["b"], t0)
    t0 = time.perf_counter()
    times["c"], stderr["c"] = run(README, caches["c"], work)
    times["bg_c"] = wait_background(caches["c"], t0)
    times["d"], stderr["d"] = run(["-c", FIRST_POINT], caches["b"], work)
    times["e"], stderr["e"] = run(README, caches["c"], work)
    times["f"], stderr["f"] = run(README, caches["b"], work)
    wait_background(caches["b"], 0.0)  # (f) may have queued what (b) did not need
    for k in caches.values():
        shutil.rmtree(k, ignore_errors=True)
    return times, stderr


#: the routes, as tests/test_coldstart_routes.py
ROUTES = {
    "one-spike sRF": "A.risk(2.0, model='srf', sigma='tanh', target='tanh', alpha0=2.0, eta=1.0, "
                     "lam=0.01)",
    "network curve": "A.risk_curve([1.0, 2.0])",
    "K=3, r=1": "A.risk_spiked(1.5, sigma='relu', target='z1 + z1*z2', loadings=[[0.9], [0.5], "
                "[0.2]], bulk=[1.0, 1.0, 1.0], fractions=[0.3, 0.3, 0.4], overlaps=[[1.0, 0.0]])",
    "K=3, r=2": "A.risk_spiked(1.5, sigma='relu', target='z1 + z1*z2', loadings=[[0.9, 0.1], "
                "[0.5, 0.6], [0.2, 0.3]], bulk=[1.0, 1.0, 1.0], fractions=[0.3, 0.3, 0.4], "
                "overlaps=[[1.0, 0.0], [0.0, 1.0]])",
    "K=3, r=3": "A.risk_spiked(1.5, sigma='relu', target='z1 + z1*z2', loadings=[[0.9, 0.1, 0.0], "
                "[0.5, 0.6, 0.1], [0.2, 0.3, 0.5]], bulk=[1.0, 1.0, 1.0], fractions=[0.3, 0.3, "
                "0.4], overlaps=[[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])",
    "steps=3 (sRF)": "A.risk(1.5, steps=3, model='srf', sigma='tanh', target='z1 + z1*z2', "
                     "alpha0=8.0, eta=(1.0, 2.0, 2.0))",
    "steps=3, readout pm1": "A.risk(1.5, steps=3, model='srf', sigma='tanh', target='z1 + z1*z2', "
                            "alpha0=8.0, eta=(1.0, 2.0, 2.0), readout='pm1')",
}
SECOND_CALL = ("import statistics, sys, time\nimport asymptotics as A\ncall = sys.argv[1]\n"
               "eval(call)\ndt = []\nfor _ in range(3):\n    t = time.perf_counter()\n"
               "    eval(call)\n    dt.append(time.perf_counter() - t)\n"
               "print(statistics.median(dt))\n")


def second_call(route: str, cache: str, cwd: str, mode: str | None = None) -> tuple[float, str]:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, MPLBACKEND="Agg")
    env.pop("GIANTSTEP_COLD_START", None)
    if mode is not None:
        env["GIANTSTEP_COLD_START"] = mode
    out = subprocess.run([sys.executable, "-c", SECOND_CALL, ROUTES[route]], env=env, cwd=cwd,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{route} failed:\n{out.stderr}")
    return float(out.stdout.split()[-1]), out.stderr


def routes(scratch: str, names: list[str]) -> None:
    warm = tempfile.mkdtemp(prefix="numba-warm-", dir=scratch)
    srf = "one-spike sRF"
    second_call(srf, warm, scratch, "compile")
    ref = statistics.median(second_call(srf, warm, scratch)[0] for _ in range(3))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores; reference: the compiled "
          f"one-spike sRF point, second call {ref * 1e3:.2f} ms (median of 3 processes)")
    print("| route | process 1 | process 2 | process 3 | compiled (warm, compile mode) | "
          "compiler done after | stderr lines |")
    print("|---|---|---|---|---|---|---|")
    for name in names:
        cache = tempfile.mkdtemp(prefix="numba-route-", dir=scratch)
        t0 = time.perf_counter()
        cells, said = [], []
        for _ in range(3):
            dt, err = second_call(name, cache, scratch)
            cells.append(f"{dt / ref:.3g}x")
            said.append(str(len(err.splitlines())))
        done = wait_background(cache, t0)
        warm = second_call(name, cache, scratch, "compile")[0]
        print(f"| {name} | {' | '.join(cells)} | {warm / ref:.3g}x | {done:.0f} s | "
              f"{'/'.join(said)} |", flush=True)
        shutil.rmtree(cache, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--first-point", action="store_true",
                    help="the first point and the README command (figures a-f) instead")
    ap.add_argument("--route", action="append", choices=list(ROUTES),
                    help="only these routes (repeatable)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--stderr", action="store_true",
                    help="print what (b) and (c) wrote on stderr in the last round")
    args = ap.parse_args()
    if not args.first_point:
        with tempfile.TemporaryDirectory(prefix="cold-start-") as scratch:
            routes(scratch, args.route or list(ROUTES))
        return
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
    for k in "def":
        if stderr[k]:
            print(f"note: {LABELS[k]} wrote on stderr (not warm?): {stderr[k].strip()[:200]}")
    if args.stderr:
        for k in "bc":
            print(f"\nstderr of {LABELS[k]}:\n{stderr[k]}", end="")


if __name__ == "__main__":
    main()
