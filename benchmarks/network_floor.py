"""The floor of a network point beyond one step against the 2x target (docs/THEORY.md §15):
per setting of :mod:`benchmarks.bench_network_steps`, the cost of ONE evaluation of the device's
Schur complement as the route calls it (:func:`asymptotics.network.schur.schur`: one Cholesky
per block, the diagonal of ``S^-1`` or with ``full`` the whole inverse; DERIVATIONS.md §9.7)
against the K-group surrogate's point (``model="srf"``), and how many of each kind a warm
network point makes and what they cost in it.

Per setting (warm: every cache filled by a first call of each route), in one run:
- ``srf``, ``net``: the best of ``--repeat`` interleaved warm points [ms];
- ``full``/``diag``: the Schur evaluations of one warm network point (count, and their CPU time
  in it [ms]), recorded by a wrapper of ``schur.schur``;
- ``one full``, ``one diag``: one evaluation of each kind replayed on the arguments of the
  route's last call (best of ``--repeat`` x 5) [ms], and its ratio to the surrogate point: 2x
  needs ``n_full one_full + n_diag one_diag + rest <= 2 srf``.
K = 1 settings (no group outside the base class) make no Schur complement: counts 0.
CPU time (``time.process_time``), BLAS on the route's threads (schur.BLAS_THREADS).
Run: python -m benchmarks.network_floor [--repeat 3] [--draws 12] [--seed S] [--only N2,D3]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from benchmarks.bench_network_steps import SEED, _risk, drawn, named


def _replay(fn, call: tuple, full: bool, repeat: int) -> float:
    """The best CPU time [s] of one ``schur.schur`` (``fn``) on the recorded arguments
    (``full`` set)."""
    from asymptotics.network.schur import blas_threads

    args, kw = call
    kw = dict(kw, full=full)
    out = math.inf
    with blas_threads():
        for _ in range(repeat):
            t = time.process_time()
            fn(*args[:5], **kw)
            out = min(out, time.process_time() - t)
    return out


def measure(name: str, kw: dict, repeat: int) -> dict:
    from asymptotics.network import schur as S

    for m in ("srf", "network"):  # the caches filled
        _risk(2.0, m, kw)
    w_srf, w_net = math.inf, math.inf
    for _ in range(repeat):
        t = time.process_time()
        _risk(2.0, "srf", kw)
        w_srf = min(w_srf, time.process_time() - t)
        t = time.process_time()
        _risk(2.0, "network", kw)
        w_net = min(w_net, time.process_time() - t)
    rec: dict = {"full": [0, 0.0], "diag": [0, 0.0], "call": None}
    orig = S.schur

    def wrapped(*args, **kwa):
        full = kwa.get("full", args[5] if len(args) > 5 else None)
        t = time.process_time()
        out = orig(*args, **kwa)
        r = rec["full" if full else "diag"]
        r[0] += 1
        r[1] += time.process_time() - t
        m = args[0].shape[0] - args[4]
        if m > 0:
            rec["call"] = (tuple(np.copy(a) if isinstance(a, np.ndarray) else a for a in args),
                    {k: v for k, v in kwa.items() if k not in ("work", "full")})
        return out

    S.schur = wrapped
    try:
        _risk(2.0, "network", kw)
    finally:
        S.schur = orig
    out = dict(name=name, srf=w_srf, net=w_net)
    for kind in ("full", "diag"):
        out[f"n_{kind}"], out[f"t_{kind}"] = rec[kind]
        out[f"one_{kind}"] = math.nan if rec["call"] is None else _replay(
            orig, rec["call"], kind == "full", 5 * repeat)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.network_floor",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--draws", type=int, default=12)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--only", default=None, help="comma-separated names (N1, D3, ...)")
    args = ap.parse_args(argv)
    settings = named() + drawn(args.draws, args.seed)
    if args.only:
        keep = {x.strip() for x in args.only.split(",")}
        settings = [s for s in settings if s[0].split()[0] in keep]
    print("setting | srf [ms] | net [ms] | net/srf | full: n, ms in point | diag: n, ms in "
          "point | one full [ms] (/srf) | one diag [ms] (/srf) | Schur share of point",
          flush=True)
    for name, kw in settings:
        try:
            r = measure(name, kw, args.repeat)
        except Exception as err:  # noqa: BLE001 (reported, not timed)
            print(f"{name} | raised {type(err).__name__}: {err}", flush=True)
            continue
        ms = 1e3
        share = (r["t_full"] + r["t_diag"]) / r["net"] if r["net"] > 0 else math.nan
        print(f"{name} | {ms * r['srf']:.1f} | {ms * r['net']:.1f} | {r['net'] / r['srf']:.2f}"
              f" | {r['n_full']}, {ms * r['t_full']:.1f} | {r['n_diag']}, {ms * r['t_diag']:.1f}"
              f" | {ms * r['one_full']:.2f} ({r['one_full'] / r['srf']:.2f}) | "
              f"{ms * r['one_diag']:.2f} ({r['one_diag'] / r['srf']:.2f}) | {share:.2f}",
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
