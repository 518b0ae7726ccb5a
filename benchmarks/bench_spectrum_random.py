"""The predicted spectra's cost on drawn settings, as ratios to a risk point of the same setting,
measured in one run (docs/THEORY.md §16).

Settings are drawn (``--seed``) from: sigma uniform in {relu, tanh, erf, sigmoid}; readout
uniform in {constant, pm1, three-value {1: 0.25, -1: 0.5, 2: 0.25}}; steps uniform in {1, 2, 3};
alpha, alpha0 log-uniform in [0.5, 4]; beta log-uniform in [0.3, 1.5]; eta_tilde = 1, target
tanh(z1). Per setting and ``of`` in (features, weights), with the default model
(``model=None``) at d = 1000: the law's construction (support, atom, outliers; first call, then
computed again with the caches below ``spectrum`` warm -- its own law cache cleared -- and an
identical call answered by that cache, best of 3), a 300-point density on [0, 1.05 edge]
(warm: best of 3 after one call; CPU and wall time, ``time.perf_counter``: the network
features' traces split their points over ``asymptotics.spectra.parallel.split.POINT_THREADS``
threads, ``--point-threads``), and one risk point
``asymptotics.risk(alpha, ..., model=<the law's model>)`` of the same setting (first call;
then warm, at alpha (1 + 1e-6 k) past the result cache).
CPU time (``time.process_time``: the machine may be shared; the density's wall time beside
it, pessimistic on a loaded machine). Run:
``python benchmarks/bench_spectrum_random.py`` (20 settings; minutes per setting on a cold
cache); the table and summary line (the densities within the target in CPU and in wall time)
are printed (runs are kept in
benchmarks/data/bench_spectrum_random.txt, each under a line naming its revision and load).
``--only 12,14``: those settings alone (drawn as in the full run: the same settings).
``--dump F.json``: every law's numbers (compare two with ``benchmarks/compare_spectrum_dumps.py``;
``--no-risk``: without the risk points).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

import asymptotics as A

SIGMAS = ("relu", "tanh", "erf", "sigmoid")
READOUTS = ("constant", "pm1", {1.0: 0.25, -1.0: 0.5, 2.0: 0.25})
TARGET = "tanh(z1)"
TARGET_DENSITY = 0.3  # s, a 300-point density (warm)
DUMP: dict | None = None  # --dump: every law's numbers, written as JSON
RISK = True  # --no-risk: the laws and densities alone (the risk columns NaN)


def draw(rng: np.random.Generator) -> dict:
    """One setting of the stated distribution."""
    logu = lambda a, b: float(math.exp(rng.uniform(math.log(a), math.log(b))))  # noqa: E731
    return dict(sigma=SIGMAS[rng.integers(len(SIGMAS))],
                readout=READOUTS[rng.integers(len(READOUTS))],
                steps=int(rng.integers(1, 4)), alpha=logu(0.5, 4.0), alpha0=logu(0.5, 4.0),
                beta=logu(0.3, 1.5), eta=1.0, target=TARGET)


def cpu(fn) -> tuple[float, object]:
    t = time.process_time()
    out = fn()
    return time.process_time() - t, out


def best(fn, repeat: int = 3) -> float:
    fn()
    return min(cpu(fn)[0] for _ in range(repeat))


def best_both(fn, repeat: int = 3) -> tuple[float, float]:
    """(CPU, wall) seconds of ``fn``, each the best of ``repeat`` warm calls."""
    fn()
    times = []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        fn()
        times.append((time.process_time() - c, time.perf_counter() - w))
    return min(c for c, _ in times), min(w for _, w in times)


def measure(of: str, alpha: float, kw: dict) -> tuple:
    """(law 1st, law 2nd, law cached, density, risk 1st, risk warm) CPU seconds, the density's
    wall seconds and the law:
    the 2nd call computes the law again (spectrum's own cache cleared, every cache below it
    warm), the cached one is a third identical call (spectrum's cache)."""
    t1, law = cpu(lambda: A.spectrum(of, alpha, **kw))
    from asymptotics import spectra

    clear = getattr(spectra, "clear_cache", lambda: None)  # (absent before the cache)
    clear()
    t2, law = cpu(lambda: A.spectrum(of, alpha, **kw))
    tc = best(lambda: A.spectrum(of, alpha, **kw)) if hasattr(spectra, "clear_cache") \
        else math.nan
    edge = law.edge if math.isfinite(law.edge) else 1.0
    x = np.linspace(0.0, 1.05 * edge, 300)
    td, tw = best_both(lambda: law.density(x))
    if DUMP is not None:  # the law's numbers (--dump): support, atom, outliers, the density
        DUMP[f"{of} {sorted(kw.items(), key=str)!r} {alpha!r}"] = dict(
            support=[list(iv) for iv in law.support], atom=law.atom, x=x.tolist(),
            density=law.density(x).tolist(), model=law.model,
            outliers=[[o.location, o.channel, dict(o.overlaps)] for o in law.outliers])
    if not RISK:
        return t1, t2, tc, td, math.nan, math.nan, tw, law
    rk = {k: v for k, v in kw.items() if k != "d"}
    r1, _ = cpu(lambda: A.risk(alpha, model=law.model, **rk))
    alphas = iter(alpha * (1.0 + 1e-6 * k) for k in range(1, 100))
    rw = best(lambda: A.risk(next(alphas), model=law.model, **rk))
    return t1, t2, tc, td, r1, rw, tw, law


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=20, help="settings drawn (default 20)")
    ap.add_argument("--seed", type=int, default=20261126)
    ap.add_argument("--of", default="features,weights")
    ap.add_argument("--only", default=None,
                    help="comma-separated setting indices to measure (default: all)")
    ap.add_argument("--dump", default=None,
                    help="write every law's support, atom, outliers and density (JSON) here")
    ap.add_argument("--point-threads", type=int, default=None,
                    help="the traces' point threads (default: the module's POINT_THREADS)")
    ap.add_argument("--no-risk", action="store_true",
                    help="no risk points (the laws' numbers for --dump alone)")
    args = ap.parse_args(argv)
    if args.point_threads is not None:
        from asymptotics.spectra.parallel import split

        split.POINT_THREADS = max(1, args.point_threads)
    global DUMP, RISK
    DUMP = {} if args.dump else None
    RISK = not args.no_risk
    try:
        only = None if args.only is None else {int(k) for k in args.only.split(",")}
    except ValueError:
        ap.error(f"--only must be comma-separated integers, got {args.only!r}")
    rng = np.random.default_rng(args.seed)
    rows = []
    print("| # | of | sigma | readout | steps | alpha | alpha0 | beta | model | law (1st / 2nd) s "
          "| law cached ms | density (300 pts) s | density wall s | risk (1st / warm) s "
          "| law / risk | density / risk |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for i in range(args.n):
        s = draw(rng)
        if only is not None and i not in only:
            continue
        ro = s["readout"] if isinstance(s["readout"], str) else "three-value"
        for of in args.of.split(","):
            kw = dict(sigma=s["sigma"], target=s["target"], alpha0=s["alpha0"], eta=s["eta"],
                      beta=s["beta"], readout=s["readout"], steps=s["steps"], d=1000.0)
            alpha = s["alpha"]
            try:
                t1, t2, tc, td, r1, rw, tw, law = measure(of, alpha, kw)
            except Exception as exc:  # noqa: BLE001 (a setting a route refuses: reported)
                print(f"| {i} | {of} | {s['sigma']} | {ro} | {s['steps']} | {alpha:.3g} | "
                      f"{s['alpha0']:.3g} | {s['beta']:.3g} | - | {type(exc).__name__}: "
                      f"{str(exc)[:80]} | | | | | | |", flush=True)
                continue
            rows.append((td, t2 / rw, td / rw, tw))
            print(f"| {i} | {of} | {s['sigma']} | {ro} | {s['steps']} | {alpha:.3g} | "
                  f"{s['alpha0']:.3g} | {s['beta']:.3g} | {law.model} | {t1:.2f} / {t2:.2f} | "
                  f"{tc * 1e3:.3f} | {td:.3f} | {tw:.3f} | {r1:.2f} / {rw:.3f} | {t2 / rw:.1f} | "
                  f"{td / rw:.2f} |",
                  flush=True)
    if args.dump:
        import json

        with open(args.dump, "w") as fh:
            json.dump(DUMP, fh)
    if rows:
        td, lr, dr, tw = (np.array(c) for c in zip(*rows, strict=True))
        ok, okw = int(np.sum(td <= TARGET_DENSITY)), int(np.sum(tw <= TARGET_DENSITY))
        print(f"\n300-point densities within {TARGET_DENSITY} s: {ok}/{td.size} CPU "
              f"(largest {td.max():.3f} s), {okw}/{tw.size} wall (largest {tw.max():.3f} s); "
              f"law / warm risk point: median "
              f"{np.median(lr):.1f}, max {lr.max():.1f}; density / warm risk point: median "
              f"{np.median(dr):.2f}, max {dr.max():.2f}")


if __name__ == "__main__":
    main()
