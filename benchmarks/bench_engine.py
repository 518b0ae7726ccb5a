"""Speed of every route of the theory against one one-spike sRF point, measured in one run.

Reference: one point of ``asymptotics.risk(alpha, model="srf")`` (tanh/tanh, alpha0 = 2,
eta = 1, lam = 0.01), warm, best of several, re-measured before each group of timings (the
machine's load varies); every figure below is printed as a ratio to it.

1. K-group points: ``N_SETTINGS`` settings drawn (seed ``SEED``) from the distribution
   ``draw_setting`` states: K uniform in 1..4, r uniform in 1..3, k (target variables)
   uniform in 1..min(r, 2), sigma from ``SIGMAS``, the target from ``TARGETS[k]``, loadings
   i.i.d. N(0, 0.6^2), bulk uniform in [0.6, 1.4], fractions Dirichlet(2, ..., 2), each overlap
   column a uniform direction times a norm uniform in [0.3, 0.95], lam from (0.01, 0.1), beta
   from (0.5, 1, 2), alpha from (0.7, 1.5, 3). A point is ``risk_spiked`` in full (tables,
   the quadrature ladder, the solve; every cache cleared before each call), best of 7 measured
   alternately with the reference. Targets: median <= 3x for r <= 2,
   <= 15x for r = 3; slowest <= 3x the median of its class (over every setting; the figures
   over the points that returned a risk are printed too where some were refused, e.g. the
   ``needs_width`` of K >= 2 groups at p = infinity, which returns at ~1x).
2. The several-steps mapping ``steps_mapping`` (T = 1, 2, 3; pm1 and constant readouts): its
   computation with every cache cleared (best of 3; target <= 50 ms for T <= 3) and a repeated
   call (cached); then ``N_MAPPING`` T = 3 settings drawn (seed ``SEED``, or
   ``--mapping-seed N``) from ``draw_mapping_setting``'s distribution (multi-index targets,
   pm1, constant and three-valued readouts, finite and infinite alpha0), each timed the same way.
3. A 100-alpha curve after three steps (``risk_curve(model="srf", steps=3, lam=0.01)``, alpha
   evenly from 0.2 to 5), timed with the mapping computed (every cache cleared) and cached,
   each the best of ``REPEAT_CURVE`` rounds measured alternately with the reference (a round:
   reference, computed, reference, cached; ``curve_rounds``; the reference is re-measured in
   every round, not once before: after a curve one sRF point takes up to twice its time in a
   fresh process): target <= 100x (CPU time; the wall-time ratios printed too); on the default
   setting and the ``N_EXTRA`` drawn ones (below), each with the curve's difference from single
   points ``asymptotics.risk`` at three of its alphas; a refused setting (a ``ValueError``, e.g.
   relu sigma and target at alpha0 = inf) prints its refusal on one line and is left out of the
   summary, as in section 2.
4. The network curve against the sRF curve (``risk_curve``, 40 alphas): target <= 1.2x, on the
   default setting and ``N_NETWORK`` settings drawn as ``draw_network_setting`` states
   (``--sections 4``: this section alone).

Times are the process's CPU time (``time.process_time``, one thread: the machine is shared and
wall time counts the waits), the best of several repeats.
Section 3 also prints extra lines on ``N_EXTRA`` settings drawn (seed ``SEED``, or
``--steps-seed N``: a fresh draw from the same distribution) by
``draw_steps_setting``: sigma from ``SIGMAS`` and ``erf(z-1)``, the target from ``TARGETS``,
the readout pm1 or constant, alpha0 from (4, 16, inf), each eta_tilde uniform in [0.5, 16].

Run: ``GIANTSTEP_COLD_START=compile python benchmarks/bench_engine.py`` (a few minutes);
``--sections 2,3``: those sections only; ``--seed N``: section 1 draws its settings with seed N
(a fresh draw from the same distribution; default ``SEED``). The first line names the cold-start
mode (``asymptotics.core.coldstart``: ``auto``, the default, loads the kernels numba has cached
and compiles the others in the background; every timing waits for that compiler first
(``settle``), so the timings are of compiled kernels either way).
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

import asymptotics as A  # noqa: E402
from asymptotics.multiindex import steps as steps_mod  # noqa: E402
from asymptotics.spiked import problem as spiked_problem  # noqa: E402
from asymptotics.spiked import risk_spiked  # noqa: E402

try:  # the interpolated moments' cache (absent before the engine's refactor)
    from asymptotics.coefficients import line_moments as line_mod  # noqa: E402
except ImportError:
    line_mod = None

SEED = 20261125
N_SETTINGS = 24
SIGMAS = ("tanh", "relu", "erf", "softplus")
TARGETS = {1: ("tanh", "z1 + 0.5*z1**2", "relu"), 2: ("z1*z2 + tanh(z1)", "z1 + z1*z2")}
ALPHAS = (0.7, 1.5, 3.0)
STEPS_SETTING = dict(sigma="erf(z-1)", target="z1 + z1*z2", alpha0=16.0, eta=(2.0, 8.0, 16.0))


N_EXTRA = 12


def draw_steps_setting(rng: np.random.Generator) -> dict:
    """One several-steps setting from the distribution of the module docstring."""
    sigmas = SIGMAS + ("erf(z-1)",)
    targets = TARGETS[1] + TARGETS[2]
    return dict(sigma=sigmas[int(rng.integers(len(sigmas)))],
                target=targets[int(rng.integers(len(targets)))],
                readout=("pm1", "constant")[int(rng.integers(2))],
                alpha0=float(rng.choice([4.0, 16.0, np.inf])),
                eta=tuple(float(x) for x in np.round(rng.uniform(0.5, 16.0, 3), 2)))


def draw_setting(rng: np.random.Generator) -> tuple[float, dict]:
    """One K-group setting from the distribution of the module docstring."""
    K = int(rng.integers(1, 5))
    r = int(rng.integers(1, 4))
    k = int(rng.integers(1, min(r, 2) + 1))
    target = TARGETS[k][int(rng.integers(len(TARGETS[k])))]
    G = rng.standard_normal((r, k))
    G /= np.linalg.norm(G, axis=0, keepdims=True)
    G *= rng.uniform(0.3, 0.95, size=k)[None, :]
    kw = dict(sigma=SIGMAS[int(rng.integers(len(SIGMAS)))], target=target,
              loadings=(0.6 * rng.standard_normal((K, r))).tolist(),
              bulk=rng.uniform(0.6, 1.4, size=K).tolist(),
              fractions=rng.dirichlet([2.0] * K).tolist(), overlaps=G.tolist(),
              lam=float(rng.choice([0.01, 0.1])), beta=float(rng.choice([0.5, 1.0, 2.0])))
    return float(rng.choice(ALPHAS)), kw


#: the longest wait for the background compiler before a timing (seconds)
SETTLE_MAX = 1800.0


def settle() -> None:
    """Wait while the background compiler has work: in the default cold-start mode a kernel
    signature met for the first time runs interpreted until it is compiled and cached, so a
    timing taken meanwhile would measure the interpreter (e.g. right after an install or an
    upgrade); one line says so when it waits."""
    from asymptotics.core import coldstart

    t0 = time.monotonic()
    while coldstart.pending() and time.monotonic() - t0 < SETTLE_MAX:
        if time.monotonic() - t0 < 1.0:
            print("  (waiting for the background compiler: kernels met for the first time)",
                  flush=True)
        time.sleep(1.0)


def best_of(fn, repeat: int = 3) -> float:
    """The best CPU time of ``repeat`` calls of ``fn``, after one untimed call and
    :func:`settle` (each timed call of a first computation clears its caches itself)."""
    fn()
    settle()
    times = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


def interleaved(fn, rounds: int = 7) -> tuple[float, float]:
    """(one sRF point, one call of ``fn``), each the best of ``rounds`` measured alternately
    (the machine's load changes over seconds: both see the same), after :func:`settle`."""
    settle()
    ref, t = [], []
    for _ in range(rounds):
        t0 = time.process_time()
        for a in ALPHAS:
            A.risk(a, model="srf")
        ref.append((time.process_time() - t0) / len(ALPHAS))
        t0 = time.process_time()
        fn()
        t.append(time.process_time() - t0)
    return min(ref), min(t)


def _say(line: str) -> None:
    print(line, flush=True)


def srf_point() -> float:
    return best_of(lambda: [A.risk(a, model="srf") for a in ALPHAS], 7) / len(ALPHAS)


def _clear_steps_cache() -> None:
    """Forget every cache a first computation would not have (the mapping's, the tables' pieces,
    the K-group tables)."""
    for mod in (steps_mod, line_mod, spiked_problem):
        clear = getattr(mod, "clear_cache", None) if mod is not None else None
        if clear is not None:
            clear()


def point(alpha: float, kw: dict) -> None:
    """A first K-group point: the caches of earlier points forgotten, then timed."""
    _clear_steps_cache()
    risk_spiked(alpha, **kw)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sections", default="1,2,3,4",
                    help="comma-separated sections to run (default: all four)")
    ap.add_argument("--seed", type=int, default=SEED, help="section 1's K-group settings")
    ap.add_argument("--mapping-seed", type=int, default=SEED, help="section 2's drawn mappings")
    ap.add_argument("--steps-seed", type=int, default=SEED, help="section 3's extra settings")
    args = ap.parse_args()
    try:
        sections = {int(x) for x in args.sections.split(",")}
    except ValueError:
        ap.error(f"--sections takes numbers 1-4 separated by commas, got {args.sections!r}")
    if not sections <= {1, 2, 3, 4}:
        ap.error(f"--sections takes numbers 1-4, got {args.sections!r}")
    seed, steps_seed = args.seed, args.steps_seed
    from asymptotics.core import coldstart

    print(f"GIANTSTEP_COLD_START mode: {coldstart.mode()}; K-group settings drawn with seed {seed}")
    for a in ALPHAS:
        A.risk(a, model="srf")
    ref = srf_point()
    print(f"reference: one sRF point {ref * 1e3:.2f} ms")
    if 1 in sections:
        k_group_points(seed)
    extra = [draw_steps_setting(np.random.default_rng([steps_seed, i])) for i in range(N_EXTRA)]
    if 2 in sections:
        steps_mappings(args.mapping_seed)
    if 3 in sections:
        print(f"section 3: extra settings drawn with seed {steps_seed}")
        steps_curves(extra)
    if 4 in sections:
        network_curve()
    sys.stdout.flush()


def k_group_points(seed: int = SEED, say=_say) -> dict[str, tuple[float, float]]:
    """Section 1 (settings drawn with ``seed``): {class: (median, slowest)} of the ratios
    (``say``: where the per-setting lines go)."""
    rng = np.random.default_rng(seed)
    rows, out = [], {}
    for i in range(N_SETTINGS):
        alpha, kw = draw_setting(rng)
        K, r = np.shape(kw["loadings"])
        res = risk_spiked(alpha, **kw)  # warm (compile)
        ref, t = interleaved(lambda kw=kw, alpha=alpha: point(alpha, kw))
        rows.append((r, t / ref, bool(res.converged)))
        say(f"  setting {i:2d}: K={K} r={r} sigma={kw['sigma']:8s} target={kw['target']:18s}"
            f" alpha={alpha:3.1f} lam={kw['lam']:4.2f} beta={kw['beta']:3.1f}: "
            f"{t * 1e3:7.1f} ms = {t / ref:6.1f}x  converged={res.converged} "
            f"kappa rule {res.n_kappa}")
    for name, sel, goal in (("r <= 2", lambda r: r <= 2, 3.0), ("r = 3", lambda r: r == 3, 15.0)):
        xs = [x for r, x, _ in rows if sel(r)]
        if xs:
            med = statistics.median(xs)
            out[name] = (med, max(xs))
            print(f"K-group points, {name} ({len(xs)} settings): median {med:.2f}x "
                  f"(target <= {goal:g}x), slowest {max(xs):.2f}x = {max(xs) / med:.2f}x the "
                  "median (target <= 3x)")
        ys = [x for r, x, ok in rows if sel(r) and ok]
        if ys and len(ys) < len(xs):  # a refusal (e.g. needs_width) is not a solved point
            med = statistics.median(ys)
            print(f"  the {len(ys)} of them that returned a risk: median {med:.2f}x, slowest "
                  f"{max(ys):.2f}x = {max(ys) / med:.2f}x the median ({len(xs) - len(ys)} "
                  "refused or not converged, timed above)")
    return out


#: section 2's drawn settings: ``N_MAPPING`` draws (seed ``SEED``, or ``--mapping-seed``) of
#: ``draw_mapping_setting``
N_MAPPING = 24
MAPPING_TARGETS = TARGETS[1] + TARGETS[2] + ("z1 + z1*z2 + z1*z2*z3",)


def draw_mapping_setting(rng: np.random.Generator) -> dict:
    """One T = 3 mapping setting: sigma from ``SIGMAS`` and ``erf(z-1)``, the target from
    ``MAPPING_TARGETS`` (three single-index, three multi-index), the readout pm1, constant or
    three-valued (probability 1/3 each; three values: 1, -1 and v uniform in
    [-2.5, -0.3] u [0.3, 2.5], weights Dirichlet(2, 2, 2) to two decimals; a v that rounds
    to +-1 adds its weight to that value's), alpha0 from (4, 16, inf), each eta_tilde uniform
    in [0.5, 16] (two decimals)."""
    sigmas = SIGMAS + ("erf(z-1)",)
    kind = int(rng.integers(3))
    if kind == 2:
        v = float(np.round(rng.uniform(0.3, 2.5) * rng.choice([-1.0, 1.0]), 2))
        w = np.round(rng.dirichlet([2.0, 2.0, 2.0]), 2)
        w = np.maximum(w, 0.05)
        w[2] = 1.0 - w[0] - w[1]
        readout: dict | str = {}
        for value, weight in ((1.0, w[0]), (-1.0, w[1]), (v, w[2])):  # v may round to +-1
            readout[value] = readout.get(value, 0.0) + float(weight)
        if not w[2] > 0.02:
            readout = "pm1"
    else:
        readout = ("pm1", "constant")[kind]
    return dict(sigma=sigmas[int(rng.integers(len(sigmas)))],
                target=MAPPING_TARGETS[int(rng.integers(len(MAPPING_TARGETS)))],
                readout=readout, alpha0=float(rng.choice([4.0, 16.0, np.inf])),
                eta=tuple(float(x) for x in np.round(rng.uniform(0.5, 16.0, 3), 2)))


def steps_mappings(seed: int = SEED, say=_say, default: bool = True) -> list[float]:
    """Section 2: the default setting (T = 1, 2, 3; ``default``) and ``N_MAPPING`` drawn T = 3
    settings; returns the drawn settings' times (s; ``say``: where their lines go)."""
    srf_point()  # the reference re-measured, as before (warms the same paths)
    for readout in ("pm1", "constant") if default else ():
        for T in (1, 2, 3):
            kw = dict(STEPS_SETTING, eta=STEPS_SETTING["eta"][:T])
            first = best_of(lambda kw=kw, T=T, readout=readout: (
                _clear_steps_cache(), A.steps_mapping(
                    kw["sigma"], kw["target"], steps=T, alpha0=kw["alpha0"], eta=kw["eta"],
                    readout=readout)), 3)
            again = best_of(lambda kw=kw, T=T, readout=readout: A.steps_mapping(
                kw["sigma"], kw["target"], steps=T, alpha0=kw["alpha0"], eta=kw["eta"],
                readout=readout), 3)
            print(f"steps mapping T={T} readout={readout:8s}: first {first * 1e3:7.1f} ms "
                  f"(target <= 50 ms), again {again * 1e3:7.2f} ms")
    rng = np.random.default_rng(seed)
    times = []
    for i in range(N_MAPPING):
        kw = draw_mapping_setting(rng)
        try:
            first = best_of(lambda kw=kw: (_clear_steps_cache(), A.steps_mapping(
                kw["sigma"], kw["target"], steps=3, alpha0=kw["alpha0"], eta=kw["eta"],
                readout=kw["readout"])), 3)
        except ValueError as exc:  # a refusal (one line) is a result, not a time
            say(f"  drawn {i:2d}: steps mapping T=3 {kw}: refused: {exc}")
            continue
        times.append(first)
        say(f"  drawn {i:2d}: steps mapping T=3 {kw}: first {first * 1e3:7.1f} ms "
            "(target <= 50 ms)")
    if times:
        print(f"steps mapping T=3, {len(times)} drawn settings (seed {seed}): median "
              f"{statistics.median(times) * 1e3:.1f} ms, slowest {max(times) * 1e3:.1f} ms, "
              f"{sum(t <= 0.05 for t in times)} of {len(times)} <= 50 ms")
    return times


#: section 3 times each curve in REPEAT_CURVE rounds; a round measures, in turn, one sRF point
#: (the reference), the curve with the mapping computed, the reference again and the curve
#: cached; each figure is the best over the rounds (the reference the best of its 2
#: REPEAT_CURVE measurements). The reference was measured once before the curve's calls: one
#: sRF point takes 0.47 ms in a fresh process and up to 0.95 ms right after a curve, and the
#: machine's load changes over seconds, so a ratio moved by tens of percent.
REPEAT_CURVE = 5


def clocks(fn) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one call of ``fn``."""
    t, w = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - t, time.perf_counter() - w


def curve_rounds(curve, rounds: int = REPEAT_CURVE) -> dict:
    """Best (CPU, wall) seconds of the reference (one sRF point), the curve with the mapping
    computed (``_clear_steps_cache`` first, not timed) and the curve cached, measured alternately
    in ``rounds`` rounds (each round: reference, computed, reference, cached)."""
    def ref() -> None:
        for a in ALPHAS:
            A.risk(a, model="srf")

    got: dict = {"ref": [], "computed": [], "cached": []}
    settle()  # (the curve's first call, before this, met its kernels)
    for _ in range(rounds):
        c, w = clocks(ref)
        got["ref"].append((c / len(ALPHAS), w / len(ALPHAS)))
        _clear_steps_cache()
        got["computed"].append(clocks(curve))
        c, w = clocks(ref)
        got["ref"].append((c / len(ALPHAS), w / len(ALPHAS)))
        got["cached"].append(clocks(curve))
    return {k: (min(c for c, _ in v), min(w for _, w in v)) for k, v in got.items()}


def steps_curves(extra: list[dict]) -> None:
    """Section 3 (and the extra settings): the curve's time with the mapping computed and cached,
    each against the reference measured alternately with it (:func:`curve_rounds`), and the curve
    against single points (``asymptotics.risk``) at three of its alphas. The ratios (and the
    targets) are CPU times; the wall-time ratios are printed after them."""
    alphas = np.linspace(0.2, 5.0, 100)

    def steps_curve(kw: dict, readout: str = "pm1"):
        if "steps" in A.risk_curve.__code__.co_varnames:
            return A.risk_curve(alphas, model="srf", steps=3, readout=readout, lam=0.01, **kw)
        # the route before: the mapping, then the K-group curve on its groups
        mp = A.steps_mapping(kw["sigma"], kw["target"], steps=3, alpha0=kw["alpha0"],
                             eta=kw["eta"], readout=readout)
        return A.risk_spiked_curve(alphas, sigma=kw["sigma"], lam=0.01, beta=1.0,
                                   **mp.spiked_params(3))

    cold, warm, cold_wall, warm_wall, refused = [], [], [], [], 0
    for i, kw in enumerate([dict(STEPS_SETTING)] + extra):
        kw = dict(kw)
        readout = kw.pop("readout", "pm1")
        try:
            df = steps_curve(kw, readout)
        except ValueError as exc:  # a refusal (one line) is a result, not a time
            print(f"  extra: 100-alpha curve after three steps {dict(kw, readout=readout)}: "
                  f"refused: {exc}", flush=True)
            refused += 1
            continue
        best = curve_rounds(lambda kw=kw, ro=readout: steps_curve(kw, ro))
        (ref, ref_w), (t_cold, w_cold), (t_warm, w_warm) = (
            best["ref"], best["computed"], best["cached"])
        cold.append(t_cold / ref)
        warm.append(t_warm / ref)
        cold_wall.append(w_cold / ref_w)
        warm_wall.append(w_warm / ref_w)
        gaps = []
        for j in (0, 37, 99):
            pt = A.risk(alphas[j], model="srf", steps=3, readout=readout, lam=0.01, **kw)
            gaps.append(abs(df.risk.iloc[j] - pt.risk) / abs(pt.risk))
        rule = df.n_kappa.iloc[0] if "n_kappa" in df else "-"
        what = ("100-alpha curve after three steps (pm1)" if i == 0 else
                f"  extra: 100-alpha curve after three steps {dict(kw, readout=readout)}")
        print(f"{what}: reference {ref * 1e3:.2f} ms; {t_cold * 1e3:.1f} ms = {t_cold / ref:.0f}x "
              f"with the mapping computed, {t_warm * 1e3:.1f} ms = {t_warm / ref:.0f}x cached "
              f"(target <= 100x; wall {w_cold / ref_w:.0f}x, {w_warm / ref_w:.0f}x); kappa rule "
              f"{rule}, converged {int(df.converged.sum())}/100; "
              f"curve vs risk() at alpha {alphas[0]:g}, {alphas[37]:.3g}, {alphas[99]:g}: "
              f"largest relative difference {max(gaps):.1e}", flush=True)
    for name, xs, ws in (("with the mapping computed", cold, cold_wall),
                         ("cached", warm, warm_wall)):
        if not xs:
            continue
        print(f"100-alpha curves after three steps, {name}, {len(xs)} settings: median "
              f"{statistics.median(xs):.0f}x, largest {max(xs):.0f}x, "
              f"{sum(x <= 100 for x in xs)} of {len(xs)} <= 100x (wall: median "
              f"{statistics.median(ws):.0f}x, largest {max(ws):.0f}x, "
              f"{sum(x <= 100 for x in ws)} of {len(ws)} <= 100x)"
              + (f"; {refused} refused" if refused else ""))


#: the settings of section 4 beyond the default one: ``N_NETWORK`` draws (seed ``SEED``) of sigma
#: from ``SIGMAS``, the target from ``TARGETS[1]`` and "sin", alpha0 uniform in [0.5, 8], eta
#: uniform in [0.25, 4], lam from (0.01, 0.1), beta from (0.5, 1, 2)
N_NETWORK = 8


def draw_network_setting(rng: np.random.Generator) -> dict:
    return dict(sigma=str(rng.choice(SIGMAS)), target=str(rng.choice((*TARGETS[1], "sin"))),
                alpha0=float(rng.uniform(0.5, 8.0)), eta=float(rng.uniform(0.25, 4.0)),
                lam=float(rng.choice((0.01, 0.1))), beta=float(rng.choice((0.5, 1.0, 2.0))))


def network_curve(n_settings: int = N_NETWORK, rounds: int = 9) -> None:
    """Section 4: the network curve against the sRF curve (``risk_curve``, 40 alphas): the default
    setting, then ``n_settings`` drawn ones; each the best of ``rounds`` measured alternately."""
    import warnings

    alphas = np.linspace(0.2, 5.0, 40)
    rng = np.random.default_rng(SEED + 4)
    settings = [{}] + [draw_network_setting(rng) for _ in range(n_settings)]
    ratios = []
    for kw in settings:
        with warnings.catch_warnings():  # (a fallback to the sampled device says so, once)
            warnings.simplefilter("ignore")
            A.risk_curve(alphas, model="network", **kw)
            A.risk_curve(alphas, model="srf", **kw)
            t_net, t_srf = [], []
            for _ in range(rounds):  # alternately (the load changes over seconds)
                t_net.append(best_of(lambda kw=kw: A.risk_curve(alphas, model="network", **kw), 1))
                t_srf.append(best_of(lambda kw=kw: A.risk_curve(alphas, model="srf", **kw), 1))
        t_net, t_srf = min(t_net), min(t_srf)
        ratios.append(t_net / t_srf)
        what = "default setting" if not kw else ", ".join(
            f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in kw.items())
        print(f"network curve {t_net * 1e3:.1f} ms, sRF curve {t_srf * 1e3:.1f} ms: "
              f"{t_net / t_srf:.2f}x (target <= 1.2x)  [{what}]", flush=True)
    print(f"network / sRF curve over {len(ratios)} settings: median "
          f"{statistics.median(ratios):.2f}x, largest {max(ratios):.2f}x (target <= 1.2x)")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
