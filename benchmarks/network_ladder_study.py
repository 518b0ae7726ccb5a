"""The network route's kappa rule on the points of NETWORK_STEPS.md: the default risk (the rule
the route's quadrature policy settles on, its status and error estimate) and, optionally, a fine
reference rule, for the points that go through ``risk_network_groups`` (THEORY.md §15).

Run once per code version (PYTHONPATH picks it) and compare the CSVs:
    python benchmarks/network_ladder_study.py run --out new.csv [--ref] [--n 72] [--seed 20261126]
    python benchmarks/network_ladder_study.py compare old.csv new.csv ref.csv
The sample: ``--n`` points drawn (``--seed``) among the points with r >= 2 spikes (72 of them:
the default takes all), and ``--ones`` of the points with r = 1, drawn with the same seed. The
reference: :data:`REF_NODES` (r = 2) or :data:`REF_ALIGNED` (r = 3). Committed run (2026-11-26,
before / after the network route took the K-group quadrature policy):
``benchmarks/data/network_ladder_{old,new,ref}.csv`` and ``network_ladder_study.txt``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np
import pandas as pd

#: the reference: r = 2, the tensor rule of 274 nodes per dimension (the ladder's top is 183);
#: r = 3, the aligned rule (DERIVATIONS.md §9.6) of trapezoid step REF_ALIGNED[0] and
#: REF_ALIGNED[1] Gauss-Hermite nodes on the other axes (the tensor rules converge slowly there)
REF_NODES = {2: 274}
REF_ALIGNED = (0.025, 54)


def _keys():
    from validation.experiments.network_steps_report import THEORY_CACHE, _problems

    df = pd.read_csv(THEORY_CACHE)
    rows = []
    for k in df.itertuples(index=False):
        net = _problems(k.sigma, k.target, k.readout, float(k.alpha0), str(k.eta),
                        len(str(k.eta).split(",")))[1]
        if net is None:
            continue  # the one-step network theory answers (not this route)
        prob = net[int(k.step)]
        r = int(np.shape(np.asarray(prob["loadings"], dtype=np.float64))[1])
        rows.append({**k._asdict(), "r": r})
    return pd.DataFrame(rows)


def _point(k, n_kappa=None):
    from asymptotics.network.route import outside_kw
    from asymptotics.network.solve import risk_network_groups
    from validation.experiments.network_steps_report import _problems, _readout

    etas = tuple(float(e) for e in str(k.eta).split(","))
    net = _problems(k.sigma, k.target, k.readout, float(k.alpha0), str(k.eta), len(etas))[1]
    ro = _readout(k.readout)
    kw = outside_kw(k.sigma, k.target, steps=int(k.step), alpha0=float(k.alpha0),
                    eta=etas[:int(k.step)], readout=ro)
    t0 = time.perf_counter()
    res = risk_network_groups(float(k.alpha), sigma=k.sigma, lam=float(k.lam),
                              beta=float(k.beta), delta=0.0, p=float(k.beta) * float(k.d),
                              n_kappa=n_kappa, **kw, **net[int(k.step)])
    return res, time.perf_counter() - t0


def _reference(k):
    """The reference rule's risk at key ``k`` (:data:`REF_NODES`, :data:`REF_ALIGNED`)."""
    if k.r in REF_NODES:
        return _point(k, REF_NODES[k.r])
    import numpy as np

    from asymptotics.network.aligned import aligned_problem, aligned_rotation
    from asymptotics.network.route import outside_kw
    from asymptotics.network.solve import solve_network
    from validation.experiments.network_steps_report import _problems, _readout

    etas = tuple(float(e) for e in str(k.eta).split(","))
    net = _problems(k.sigma, k.target, k.readout, float(k.alpha0), str(k.eta), len(etas))[1]
    params = dict(net[int(k.step)], sigma=k.sigma, lam=float(k.lam), beta=float(k.beta),
                  delta=0.0, p=float(k.beta) * float(k.d))
    sig = np.asarray(params.pop("channels"), dtype=np.float64)
    kw = outside_kw(k.sigma, k.target, steps=int(k.step), alpha0=float(k.alpha0),
                    eta=etas[:int(k.step)], readout=_readout(k.readout))
    t0 = time.perf_counter()
    prob, ch = aligned_problem(params, sig, *REF_ALIGNED, None)
    coupled = kw.get("coupled")
    if coupled is not None:
        ch = coupled.rotated(aligned_rotation(np.asarray(params["loadings"]), params["bulk"]))
        coupled.bulk.forget()
    bulk = kw.get("outside") if coupled is None else coupled.bulk
    res = solve_network(prob, ch, float(k.alpha), bulk=bulk)
    return res, time.perf_counter() - t0


def run(out: str, n: int, ones: int, seed: int, ref: bool) -> None:
    keys = _keys()
    rng = np.random.default_rng(seed)
    multi = keys[keys.r >= 2]
    one = keys[keys.r == 1]
    pick = list(rng.choice(len(multi), size=min(n, len(multi)), replace=False))
    pick1 = list(rng.choice(len(one), size=min(ones, len(one)), replace=False))
    sample = pd.concat([multi.iloc[sorted(pick)], one.iloc[sorted(pick1)]], ignore_index=True)
    print(f"{len(keys)} network-route points ({len(multi)} with r >= 2, {len(one)} with r = 1);"
          f" sampled {len(sample)}", file=sys.stderr, flush=True)
    rows = []
    for i, k in enumerate(sample.itertuples(index=False)):
        res, dt = _point(k)
        row = {**k._asdict(), "risk": res.risk, "converged": res.converged,
               "n_kappa": res.n_kappa, "quadrature_change": res.quadrature_change,
               "message": res.message, "seconds": dt}
        if ref and k.r >= 2:
            rr, dr = _reference(k)
            row.update(ref=rr.risk if rr.converged else math.nan, ref_seconds=dr)
        rows.append(row)
        print(f"{i + 1}/{len(sample)} r={k.r} {k.sigma} {k.target} t={k.step} a={k.alpha}: "
              f"{res.risk!r} n_kappa={res.n_kappa} err={res.quadrature_change:.2g} "
              f"({dt:.1f} s) ref {row.get('ref', math.nan)!r}",
              file=sys.stderr, flush=True)
        pd.DataFrame(rows).to_csv(out, index=False)


def compare(old: str, new: str, ref: str) -> None:
    o, nw, rf = pd.read_csv(old), pd.read_csv(new), pd.read_csv(ref)
    o, nw = (f.drop(columns=[c for c in ("ref", "ref_seconds") if c in f]) for f in (o, nw))
    key = ["sigma", "target", "readout", "alpha0", "eta", "step", "alpha", "beta", "lam", "d"]
    m = o.merge(nw, on=key + ["r"], suffixes=("_old", "_new")).merge(
        rf[key + ["ref"]], on=key, how="left")
    m1 = m[m.r == 1]
    same = (m1.risk_old.to_numpy() == m1.risk_new.to_numpy()) | (
        m1.risk_old.isna().to_numpy() & m1.risk_new.isna().to_numpy())
    print(f"r = 1: {int(same.sum())}/{len(m1)} bit-identical")
    mm = m[m.r >= 2].copy()
    for v in ("old", "new"):
        mm[f"err_{v}"] = (mm[f"risk_{v}"] - mm.ref).abs() / mm.ref.abs()
    ok = mm.ref.notna()
    print(f"r >= 2: {len(mm)} points, {int(ok.sum())} with a converged reference")
    for v in ("old", "new"):
        e = mm.loc[ok, f"err_{v}"]
        print(f"  {v}: settled {int(mm[f'converged_{v}'].sum())}/{len(mm)}; "
              f"max |{v} - ref|/ref {e.max():.3g}, median {e.median():.3g}, "
              f"> 1e-3: {int((e > 1e-3).sum())}")
    flip = mm[mm.converged_old != mm.converged_new]
    print(f"  status changed: {len(flip)} ({int((flip.converged_new).sum())} newly settled, "
          f"{int((~flip.converged_new).sum())} newly unsettled)")
    cols = key[:2] + ["step", "alpha", "d", "r", "risk_old", "risk_new", "ref", "n_kappa_old",
                      "n_kappa_new", "err_old", "err_new"]
    with pd.option_context("display.width", 250, "display.max_columns", 30):
        print(mm[cols].to_string())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--n", type=int, default=72)
    r.add_argument("--ones", type=int, default=24)
    r.add_argument("--seed", type=int, default=20261126)
    r.add_argument("--ref", action="store_true")
    c = sub.add_parser("compare")
    c.add_argument("old")
    c.add_argument("new")
    c.add_argument("ref")
    a = ap.parse_args(argv)
    if a.cmd == "run":
        run(a.out, a.n, a.ones, a.seed, a.ref)
    else:
        compare(a.old, a.new, a.ref)
    return 0


if __name__ == "__main__":
    sys.exit(main())
