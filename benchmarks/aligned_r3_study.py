"""The aligned kappa ladder at r = 3 (docs/THEORY.md §10.8): a setting whose K-group surrogate
the tensor Gauss-Hermite ladder does not resolve, against the aligned rules, a finer aligned rule
off the ladder, the largest accepted tensor rule and a Monte Carlo of the same groups.

Setting: relu, target ``z1 + z1*z2``, the three-value readout {2: 1/4, 1: 1/2, -1: 1/4},
alpha0 = 8, eta_tilde = (2, 4, 8), T = 2 and 3 steps (three groups, r = 3 learned directions),
beta = 1, lam = 0.01, width p = 1000, alpha in (0.5, 2). For each point it prints the tensor
ladder's rules (16 ... 72 nodes a dimension) and the aligned ones with their risks, the point as
``asymptotics.risk`` returns it, the aligned rule (0.025, 72) (off the ladder), the tensor rule of
106 nodes a dimension (1.2e6 nodes, the largest accepted) and, unless ``--no-mc``, the Monte
Carlo of these groups (``validation.spiked.simulator``: d = 1000 with 12 repetitions and
d = 2000 with 6, seed 1; the rotated target written out as a text in z1, z2); then a 20-alpha
curve (0.2 to 4) with the tensor ladder alone and with the aligned one.
``--peak``: only the curves' maximum, which lies below alpha = beta (near 0.6-0.7 after two
steps, 0.5 after three): the surrogate's curve and the Monte Carlo of its groups (d = 1000 and
2000) at nine alphas from 0.3 to 1.5.
Run: python benchmarks/aligned_r3_study.py [--no-mc] [--peak] [--out FILE]
(~2 CPU-minutes without the Monte Carlo, ~10 with it; ``--peak`` ~4.)
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np

THREE = {2.0: 0.25, 1.0: 0.5, -1.0: 0.25}
SETTING = dict(sigma="relu", target="z1 + z1*z2", readout=THREE, alpha0=8.0)
ETA = (2.0, 4.0, 8.0)
ALPHAS = (0.5, 2.0)
LAM, BETA, P = 0.01, 1.0, 1000.0


def groups(T: int) -> dict:
    """The K-group parameters of the setting after T steps (the rotated target kept)."""
    import asymptotics as A
    from asymptotics.multiindex.steps_risk import mapping_params

    mp = A.steps_mapping(SETTING["sigma"], SETTING["target"], steps=T,
                         alpha0=SETTING["alpha0"], eta=ETA[:T], readout=SETTING["readout"])
    return mapping_params(mp, T)


def target_text(t: object) -> str:
    """``z1 + z1*z2`` at ``Q z`` (a rotated target) as a text the simulator parses."""
    if isinstance(t, str):
        return t
    Q = t.Q
    z1 = f"({float(Q[0, 0])!r}*z1 + {float(Q[0, 1])!r}*z2)"
    z2 = f"({float(Q[1, 0])!r}*z1 + {float(Q[1, 1])!r}*z2)"
    return f"{z1} + {z1}*{z2}"


def theory_rows(T: int, alpha: float, say) -> None:
    import asymptotics as A
    from asymptotics.equations.ladder import aligned_ladder, ladder
    from asymptotics.spiked.problem import spiked_builder
    from asymptotics.spiked.solve import solve_spiked

    params = groups(T)
    build = spiked_builder(sigma=SETTING["sigma"], lam=LAM, beta=BETA, p=P, delta=0.0, **params)
    U = np.asarray(params["loadings"])
    width = np.sqrt(np.asarray(params["bulk"])) / np.linalg.norm(U, axis=1)
    say(f"T = {T}, alpha = {alpha:g}: loadings' norms {np.round(np.linalg.norm(U, axis=1), 2)}, "
        f"feature widths sqrt(c_g)/|u_g| {np.round(width, 3)}")
    for name, rules in (("tensor", ladder(3) + (106,)), ("aligned", aligned_ladder(3) +
                                                           ((0.025, 72),))):
        for rule in rules:
            t0 = time.process_time()
            prob = build(rule, None)
            res = solve_spiked(prob, alpha)
            off = "" if rule in ladder(3) + aligned_ladder(3) else "  (off the ladder)"
            say(f"  {name:7s} rule {str(rule):12s} {prob.tables.weights.shape[0]:8d} nodes: risk "
                f"{res.risk:.7f} {res.status}{off}  [{time.process_time() - t0:.1f} s]")
    res = A.risk(alpha, model="srf", steps=T, eta=ETA[:T], beta=BETA, lam=LAM, p=P, **SETTING)
    say(f"  asymptotics.risk: {res.risk:.7f} {res.status}, n_kappa {res.n_kappa}, "
        f"estimated error {res.quadrature_change:.2g}: {res.message[:90]}")


def curve_rows(T: int, say) -> None:
    """A 20-alpha curve from 0.2 to 4 with the aligned ladder taken away at r = 3 (the tensor
    ladder alone, as before it was added) and with it: converged rows, CPU time, peak memory."""
    import resource

    import asymptotics as A
    from asymptotics.equations import ladder as ladder_mod
    from asymptotics.spiked.problem import PROBES_CACHE

    alphas = np.linspace(0.2, 4.0, 20)
    kept = ladder_mod.ALIGNED_LADDER[3]
    for label, rules in (("tensor ladder alone", ()), ("with the aligned ladder", kept)):
        ladder_mod.ALIGNED_LADDER[3] = rules
        PROBES_CACHE.clear()  # (a curve's probes are kept: the two curves must not share them)
        t0 = time.process_time()
        try:
            df = A.risk_curve(alphas, model="srf", steps=T, eta=ETA[:T], beta=BETA, lam=LAM, p=P,
                              progress=False, **SETTING)
        finally:
            ladder_mod.ALIGNED_LADDER[3] = kept
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        say(f"  curve T = {T}, {label}: {int(df.converged.sum())} of {len(df)} rows converged, "
            f"rules {sorted(set(df.n_kappa))}, largest estimated error "
            f"{df.quadrature_change.max():.2g}, {time.process_time() - t0:.1f} CPU-s "
            f"(process peak {peak:.0f} MB)")


def simulated(T: int, d: int, seeds: int, alphas: tuple, seed: int) -> tuple:
    """(mean, s.e., CPU seconds) of the Monte Carlo of the groups after T steps at ``alphas``
    (``validation.spiked.simulator``, p = beta d; the rotated target written out as a text)."""
    from validation.spiked.simulator import SpikedSetting, simulate_spiked

    params = dict(groups(T))
    text = target_text(params.pop("target"))
    s = SpikedSetting(sigma=SETTING["sigma"], target=text, alpha=alphas[0], lam=LAM, beta=BETA,
                      d=d, **params)
    t0 = time.process_time()
    res = simulate_spiked(s, alphas, seeds=seeds, seed=seed)
    se = res.risks.std(0, ddof=1) / np.sqrt(res.risks.shape[0])
    return res.risks.mean(0), se, time.process_time() - t0


def monte_carlo(T: int, say) -> None:
    for d, seeds in ((1000, 12), (2000, 6)):
        m, se, cpu = simulated(T, d, seeds, ALPHAS, 1)
        cells = ", ".join(f"alpha {a:g}: {x:.4f} +- {e:.4f}" for a, x, e in zip(ALPHAS, m, se,
                                                                              strict=True))
        say(f"  Monte Carlo T = {T}, d = {d} (p = {int(BETA * d)}; {seeds} repetitions): {cells}"
            f"  [{cpu:.0f} s]")


#: ``--peak``: the curves' peak below alpha = beta, theory and Monte Carlo at these alphas
PEAK_ALPHAS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1.0, 1.2, 1.5)


def peak_rows(T: int, say, mc: bool) -> None:
    """The curve after T steps at :data:`PEAK_ALPHAS` (``asymptotics.risk_curve``, the surrogate,
    at the width p = beta d of each simulation) and the Monte Carlo of its groups (d = 1000 with
    12 repetitions and d = 2000 with 6, seed 7), with each point's z = (theory - mean) / s.e."""
    import asymptotics as A

    for d, seeds in ((1000, 12), (2000, 6)):
        p = BETA * d
        th = A.risk_curve(list(PEAK_ALPHAS), model="srf", steps=T, eta=ETA[:T], beta=BETA,
                          lam=LAM, p=p, progress=False, **SETTING)
        say(f"peak T = {T}, theory at p = {p:g}: " + ", ".join(
            f"{a:g}: {r:.4f}" + ("" if ok else " (not converged)")
            for a, r, ok in zip(PEAK_ALPHAS, th.risk, th.converged, strict=True))
            + f"; largest at alpha {PEAK_ALPHAS[int(np.nanargmax(th.risk))]:g}")
        if not mc:
            continue
        m, se, cpu = simulated(T, d, seeds, PEAK_ALPHAS, 7)
        say(f"  Monte Carlo d = {d} (p = {int(p)}; {seeds} repetitions): " + ", ".join(
            f"{a:g}: {x:.4f} +- {e:.4f}" for a, x, e in zip(PEAK_ALPHAS, m, se, strict=True))
            + f"; largest at alpha {PEAK_ALPHAS[int(np.argmax(m))]:g}"
            + f"  [{cpu:.0f} s]")
        say("    z: " + ", ".join(f"{a:g}: {(r - x) / e:+.1f}" for a, r, x, e in zip(
            PEAK_ALPHAS, th.risk, m, se, strict=True)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--no-mc", action="store_true", help="skip the Monte Carlo")
    ap.add_argument("--out", default=None, help="also write the lines to this file")
    ap.add_argument("--peak", action="store_true",
                    help="only the curves' peak below alpha = beta: theory and Monte Carlo at "
                         "nine alphas from 0.3 to 1.5 (~4 CPU-minutes)")
    args = ap.parse_args()
    lines: list[str] = []

    def say(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    warnings.simplefilter("ignore")
    for T in (2, 3) if args.peak else ():
        peak_rows(T, say, not args.no_mc)
    for T in () if args.peak else (2, 3):
        for alpha in ALPHAS:
            theory_rows(T, alpha, say)
        curve_rows(T, say)
        if not args.no_mc:
            monte_carlo(T, say)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write("# python benchmarks/aligned_r3_study.py" + (" --peak" if args.peak else "")
                     + " --out " + args.out + "\n")
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
