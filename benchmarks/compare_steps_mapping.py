"""The several-steps mapping of this checkout against another checkout's, on drawn settings.

Each side runs in its own process (``--dump``: this checkout's package, or the one on
``PYTHONPATH``) and writes every state (``a``, the outside Gram ``L L^T``, ``c``) of
``steps_mapping`` for ``N`` settings drawn (``--seed``) from ``draw``'s distribution; ``--compare``
reads two dumps and prints, per setting, the largest difference of each array relative to that
array's largest entry (over the states t = 1..T), and the largest over all settings.

    PYTHONPATH=/path/to/ref python benchmarks/compare_steps_mapping.py --dump ref.npz
    PYTHONPATH=$PWD python benchmarks/compare_steps_mapping.py --dump new.npz
    python benchmarks/compare_steps_mapping.py --compare ref.npz new.npz

``--bench``: the settings of ``bench_engine.py``'s section 2 instead (T = 3, drawn with ``--seed``).

``--validate I J ...``: for those settings, each step from this checkout's state before it, by
this checkout's rules and by the former default rules (lattice step 0.04/0.08/0.2 for r = 1/2/3,
96-node Gauss-Hermite xi rule, tensor rule on the other axes), against a reference on the same
code path with a lattice twice as fine and a trapezoid xi rule 0.04 apart in the
pre-activation (other axes: 128 nodes per axis for a non-polynomial target at r <= 2); the
largest difference of a, L L^T, c relative to each array's largest entry.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

SIGMAS = ("tanh", "relu", "erf", "softplus", "erf(z-1)")
TARGETS = ("tanh", "z1 + 0.5*z1**2", "relu", "z1*z2 + tanh(z1)", "z1 + z1*z2",
           "z1 + z1*z2 + z1*z2*z3")
READOUTS = ("constant", "pm1", {1.0: 0.3, -1.0: 0.3, 2.0: 0.4}, {-1.0: 0.25, 0.5: 0.5, 2.0: 0.25})


def draw(rng: np.random.Generator) -> dict:
    """sigma, target, readout uniform over the lists above; alpha0 from (4, 16, inf); T uniform
    in 1..3; each eta_tilde uniform in [0.5, 16] (two decimals)."""
    T = int(rng.integers(1, 4))
    return dict(sigma=SIGMAS[int(rng.integers(len(SIGMAS)))],
                target=TARGETS[int(rng.integers(len(TARGETS)))],
                readout=READOUTS[int(rng.integers(len(READOUTS)))],
                alpha0=float(rng.choice([4.0, 16.0, math.inf])), steps=T,
                eta=tuple(float(x) for x in np.round(rng.uniform(0.5, 16.0, T), 2)))


def settings(seed: int, n: int) -> list[dict]:
    if BENCH:  # bench_engine's section 2: its T = 3 settings drawn with ``seed``
        import os
        import sys

        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from bench_engine import draw_mapping_setting

        rng = np.random.default_rng(seed)
        return [dict(draw_mapping_setting(rng), steps=3) for _ in range(n)]
    rng = np.random.default_rng(seed)
    return [draw(rng) for _ in range(n)]


BENCH = False


def dump(path: str, seed: int, n: int) -> None:
    import asymptotics as A
    from asymptotics.multiindex import steps as steps_mod

    out, meta = {}, []
    for i, kw in enumerate(settings(seed, n)):
        steps_mod.clear_cache()
        t0 = time.process_time()
        try:
            mp = A.steps_mapping(kw["sigma"], kw["target"], steps=kw["steps"],
                                 alpha0=kw["alpha0"], eta=kw["eta"], readout=kw["readout"])
        except Exception as exc:  # noqa: BLE001 (recorded, compared as text)
            meta.append(dict(i=i, error=f"{type(exc).__name__}: {exc}"))
            continue
        dt = time.process_time() - t0
        for st in mp.states[1:]:
            out[f"{i}_{st.step}_a"] = st.a
            out[f"{i}_{st.step}_LL"] = st.L @ st.L.T
            out[f"{i}_{st.step}_c"] = st.c
        meta.append(dict(i=i, seconds=dt))
        print(i, {k: v for k, v in kw.items()}, f"{dt * 1e3:.1f} ms", flush=True)
    out["meta"] = np.array(json.dumps(meta))
    np.savez(path, **out)


def compare(ref_path: str, new_path: str, seed: int, n: int) -> None:
    ref, new = np.load(ref_path), np.load(new_path)
    mref = {m["i"]: m for m in json.loads(str(ref["meta"]))}
    mnew = {m["i"]: m for m in json.loads(str(new["meta"]))}
    worst_all = 0.0
    for i, kw in enumerate(settings(seed, n)):
        a, b = mref.get(i, {}), mnew.get(i, {})
        if "error" in a or "error" in b:
            print(i, kw, "ref:", a.get("error", "ok"), "| new:", b.get("error", "ok"))
            continue
        worst = {}
        for t in range(1, kw["steps"] + 1):
            for name in ("a", "LL", "c"):
                x, y = ref[f"{i}_{t}_{name}"], new[f"{i}_{t}_{name}"]
                scale = max(float(np.max(np.abs(x), initial=0.0)), 1e-300)
                d = float(np.max(np.abs(x - y), initial=0.0)) / scale
                worst[name] = max(worst.get(name, 0.0), d)
        w = max(worst.values())
        worst_all = max(worst_all, w)
        print(f"{i:3d} {w:9.2e} ref {a['seconds'] * 1e3:8.1f} ms new {b['seconds'] * 1e3:8.1f} ms "
              f"{kw}")
    print(f"largest relative difference over {n} settings: {worst_all:.3e}")


def validate(ids: list[int], seed: int, n: int) -> None:
    import asymptotics as A
    from asymptotics.multiindex import step_rules
    from asymptotics.multiindex import steps as S

    S.MAX_NODES = 10**9  # the references' lattices (r = 3 at step 0.1)
    step_rules.check_size = lambda *a: None

    def rel(x, y) -> float:
        out = 0.0
        for u, v in ((x.a, y.a), (x.L @ x.L.T, y.L @ y.L.T), (x.c, y.c)):
            out = max(out, float(np.max(np.abs(u - v))) / max(float(np.max(np.abs(v))), 1e-300))
        return out

    sets = settings(seed, n)
    for i in ids:
        kw = sets[i]
        args = dict(steps=kw["steps"], alpha0=kw["alpha0"], eta=kw["eta"], readout=kw["readout"])
        mp = A.steps_mapping(kw["sigma"], kw["target"], **args)
        m = S.mapping_inputs(kw["sigma"], kw["target"], delta=0.0, quad=S.Quadrature(), **args)
        notes, worst = [], [0.0, 0.0]
        for t in range(1, kw["steps"] + 1):
            st = mp.states[t - 1]
            common = dict(sigma=m.sigma, g=m.g, values=m.values, fractions=m.fractions,
                          eta=m.etas[t - 1], alpha0=kw["alpha0"], delta=0.0, degree=m.degree)
            r = int(np.linalg.matrix_rank(np.hstack([st.a, st.L]), tol=1e-10)) if t > 1 else 0
            h0 = S.TRAPEZOID_STEP.get(r, 0.25)
            old = S.advance(st, per=None, quad=S.Quadrature(h=h0), **common)
            sc = float(np.sqrt(np.max(st.c)))
            x = np.arange(-12.0, 12.0 + 0.02 / sc, 0.04 / sc)
            w = np.exp(-0.5 * x * x)
            rest = 128 if (m.degree is None and r <= 2) else None
            orig, S.gauss_hermite = S.gauss_hermite, lambda _n, x=x, w=w: (x, w / w.sum())
            try:
                ref = S.advance(st, per=None, quad=S.Quadrature(h=h0 if rest else h0 / 2,
                                                                rest=rest), **common)
            finally:
                S.gauss_hermite = orig
            dn, do = rel(mp.states[t], ref), rel(old, ref)
            worst = [max(worst[0], dn), max(worst[1], do)]
            notes.append(f"t{t} (r={r}, sqrt c {sc:.1f}): new {dn:.1e} former {do:.1e}")
        print(f"#{i:3d} new {worst[0]:.1e} former {worst[1]:.1e} | {'; '.join(notes)} | {kw}",
              flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dump")
    ap.add_argument("--compare", nargs=2)
    ap.add_argument("--seed", type=int, default=20261126)
    ap.add_argument("-n", type=int, default=216)
    ap.add_argument("--validate", type=int, nargs="+")
    ap.add_argument("--bench", action="store_true",
                    help="the settings of bench_engine.py's section 2 (T = 3), seed --seed")
    args = ap.parse_args()
    global BENCH
    BENCH = args.bench
    if args.validate:
        validate(args.validate, args.seed, args.n)
    if args.dump:
        dump(args.dump, args.seed, args.n)
    if args.compare:
        compare(*args.compare, args.seed, args.n)


if __name__ == "__main__":
    main()
