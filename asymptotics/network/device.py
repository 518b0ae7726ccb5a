"""The sampled device of the groups' bulk outside E after T giant steps (docs/DERIVATIONS.md
§9.7, THEORY.md §15): each group's population covariance on the directions outside the span E
of the target and of the spikes, formed on B independent blocks of n directions (fixed seed: the
device is deterministic and cached per setting).

Row i of group g has, outside E, the bulk ``b`` with covariance ``C_g / d``; a step with batch
``x_mu`` (``n0 = alpha0 n`` samples on a block) maps it, at a fixed batch and to leading order,
to the covariance (DERIVATIONS.md §9.2)

    C_g <- L_g C_g L_g^T + n eta^2 eps_g^2 n0^-2 sum_mu e~_mu^2 (v_g - m2_g^2) x_mu x_mu^T,
    L_g  = I + eta eps_g n0^-1 sum_mu e~_mu m1'_g(s_g . x_mu) x_mu x_mu^T,

``e~ = y - f`` the residual with the label noise, ``m1'_g = m2_g / sqrt(c_g)``, ``v_g = Var_xi
sigma'``, ``m2_g = E[xi sigma']`` (the part of ``sigma'`` linear in the bulk is in ``L_g``; the rest
is the row noise), evaluated at the sample's coordinates on E (target ``z``, the spikes'
outside coordinates ``h``: independent standard normals) and the state before the step
(:func:`asymptotics.network.groups.network_groups`). ``C_g = I`` at t = 0. The blocks' covariances
are normalised to trace n each (their mean variance is the recursion's ``c_g`` up to the device's
sampling; :func:`device_scales` gives the ratio).
"""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from asymptotics.coefficients.functions import Function
from asymptotics.coefficients.gauss_rules import gauss_hermite
from asymptotics.core.progress import Progress
from asymptotics.measures.population import MAX_DEVICE_BYTES
from asymptotics.multiindex.steps import Quadrature, mapping_inputs
from asymptotics.multiindex.steps import evaluate as _evaluate
from asymptotics.multiindex.xi_lines import xi_moments
from asymptotics.network.bulk import GroupBulk
from asymptotics.network.groups import DEFAULT_QUAD, network_groups
from asymptotics.network.schur import blas_threads

#: the device: B blocks of n outside directions (d = B n), the seed of its batches. Its
#: sampling error falls like (B n)^-1/2: with 4 blocks the risk of relu ``z1 + z1*z2`` after two
#: steps (alpha0 = 16, eta = 2, 8) moved by 4-7% (s.d.) between device seeds, with 32 by about
#: 1% (docs/DERIVATIONS.md §9.9)
DEVICE_SIZE = 100
DEVICE_BLOCKS = 32
DEVICE_SEED = 0
XI_NODES = 96
#: the reference sample of the weights' moments (antithetic pairs)
N_REF = 400_000

_CACHE: dict = {}
CACHE_SIZE = 64
#: the coupled devices kept on disk between processes (``$XDG_CACHE_HOME/giantstep/device``,
#: beside the compiled kernels), the newest DISK_KEEP files; each file is named by the setting
#: and a hash of this package's sources and numpy's and scipy's versions (a changed source or
#: library never reads an older device).
#: ``GIANTSTEP_DEVICE_CACHE=0`` turns it off. A device is an exact function of its setting: a
#: file read back is the computed device bit for bit
DISK_KEEP = 32
#: the directory of those files (None: beside the compiled kernels, as above)
DISK_DIR: Path | None = None
_FINGERPRINT: list[str] = []


def _disk_path(key: tuple) -> Path | None:
    """The file of a coupled device's ``key`` (None: no disk cache, or a sigma that is a user
    callable, whose computation its name does not determine)."""
    if os.environ.get("GIANTSTEP_DEVICE_CACHE", "1").strip().lower() in ("0", "off", "no",
                                                                         "false"):
        return None
    if getattr(key[1], "identity", None) is not None:
        return None
    from asymptotics.core.numba_cache import cache_root

    if not _FINGERPRINT:
        pkg = Path(__file__).resolve().parents[1]
        import scipy

        h = hashlib.sha256(f"numpy {np.__version__} scipy {scipy.__version__}".encode())
        for f in sorted(pkg.rglob("*.py")):
            h.update(str(f.relative_to(pkg)).encode() + b"\0" + f.read_bytes() + b"\0")
        _FINGERPRINT.append(h.hexdigest()[:16])
    name = hashlib.sha256(repr(key).encode()).hexdigest()[:24]
    folder = DISK_DIR if DISK_DIR is not None else cache_root().parent / "device"
    return folder / f"{_FINGERPRINT[0]}-{name}.npz"


def _disk_read(path: Path | None) -> tuple | None:
    """A kept device ``(sig, a, ecov, r)``, None if absent or unreadable."""
    if path is None or not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            out = (z["sig"], z["a"], z["ecov"], int(z["r"]))
    except (OSError, ValueError, KeyError):
        return None
    if not all(x.dtype == np.float64 for x in out[:3]):
        return None
    return out


def _disk_write(path: Path | None, out: tuple) -> None:
    """Keep ``out`` at ``path`` (atomically; the oldest files beyond DISK_KEEP removed); a
    directory that cannot be written is skipped silently."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npz")
        np.savez(tmp, sig=out[0], a=out[1], ecov=out[2], r=np.int64(out[3]))
        os.replace(tmp, path)
        kept = sorted(path.parent.glob("*.npz"), key=lambda f: f.stat().st_mtime)
        for f in kept[:max(0, len(kept) - DISK_KEEP)]:
            f.unlink(missing_ok=True)
    except OSError:
        return


def device_covariances(sigma: str | Function, target: str, *, steps: int, alpha0: float,
                       eta: float | Sequence[float], delta: float = 0.0,
                       readout: object = "constant", size: int = DEVICE_SIZE,
                       blocks: int = DEVICE_BLOCKS, seed: int = DEVICE_SEED,
                       quad: Quadrature = DEFAULT_QUAD) -> tuple[np.ndarray, np.ndarray]:
    """``(sig, scale)``: the normalised covariances outside E after ``steps`` steps (B x K x n x
    n, each block's trace n) and each block's mean variance over the recursion's ``c_g``
    (B x K; 1 up to the device's sampling). Cached."""
    if not math.isfinite(alpha0):
        raise ValueError(f"the bulk device needs a finite alpha0, got {alpha0}")
    size = int(size)
    blocks = int(blocks)
    if size < 2 or blocks < 1:
        raise ValueError(f"device size must be >= 2 and blocks >= 1, got {size}, {blocks}")
    m = mapping_inputs(sigma, target, steps=steps, alpha0=alpha0, eta=eta, delta=delta,
                       readout=readout, quad=quad)
    key = (m.sigma, target, m.readout, float(alpha0), m.etas, m.delta, size, blocks, seed, quad)
    try:
        hit = _CACHE.get(key)
    except TypeError:  # an unhashable sigma or target: no cache
        key, hit = None, None
    if hit is not None:
        return hit
    with blas_threads():
        out = _covariances(m, target, alpha0, size, blocks, seed, quad)
    for arr in out:
        arr.flags.writeable = False
    if key is not None:
        _CACHE[key] = out
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
    return out



def _covariances(m, target, alpha0, size, blocks, seed, quad) -> tuple[np.ndarray, np.ndarray]:
    """The computation of :func:`device_covariances` (its cache missed)."""
    ng = network_groups(m.sigma, target, steps=m.steps, alpha0=alpha0, eta=m.etas,
                        delta=m.delta, readout=m.readout, quad=quad)
    values, fractions, k = np.asarray(m.values), np.asarray(m.fractions), m.k
    K = len(values)
    xi, wxi = gauss_hermite(XI_NODES)
    rng = np.random.default_rng(np.random.SeedSequence([seed, size, blocks]))
    n0 = max(1, int(round(alpha0 * size)))
    refs = []
    rr = np.random.default_rng(np.random.SeedSequence([seed, 1]))
    for t in range(m.steps):
        st = ng.states[t]
        Er, nr = _reference(rr, N_REF, k, st.L.shape[1])
        w, u = _weights(m, st, Er, nr, fractions, values, xi, wxi)
        refs.append((w.mean(axis=0), w.std(axis=0), u.mean(axis=0)))
    sig = np.empty((blocks, K, size, size))
    scale = np.empty((blocks, K))
    for b in range(blocks):
        C = np.repeat(np.eye(size)[None], K, axis=0)
        for t in range(m.steps):
            st = ng.states[t]
            eta_t = m.etas[t]
            E = rng.standard_normal((n0, k + st.L.shape[1]))
            X = rng.standard_normal((n0, size))
            noise = rng.standard_normal(n0)
            w, u = _weights(m, st, E, noise, fractions, values, xi, wxi)
            mw, sw, mu = refs[t]
            for g in range(K):
                # the weights' first two moments (and the noise weight's mean) set to the
                # reference's: their O(n0^-1/2) sampling would move the whole spectrum
                wg = mw[g] + (w[:, g] - w[:, g].mean()) * (sw[g] / max(w[:, g].std(), 1e-300))
                ug = u[:, g] * (mu[g] / u[:, g].mean()) if u[:, g].mean() > 0 else u[:, g]
                Mg = (X.T * wg) @ X / n0
                Lg = np.eye(size) + eta_t * values[g] * Mg
                Qg = (X.T * ug) @ X
                C[g] = Lg @ C[g] @ Lg.T + size * (eta_t * values[g] / n0) ** 2 * Qg
        cT = ng.states[m.steps].c
        for g in range(K):
            tr = float(np.trace(C[g]))
            scale[b, g] = tr / size / cT[g] if cT[g] > 0 else 1.0
            sig[b, g] = 0.5 * (C[g] + C[g].T) * (size / tr)
    return sig, scale


def _reference(rng: np.random.Generator, n: int, k: int, q: int
               ) -> tuple[np.ndarray, np.ndarray]:
    """The reference sample of ``(z, h)`` and the label noise: antithetic in ``(z, h)`` and
    symmetric under the sign of ``h`` (the law is; the groups' outside basis is fixed only up to
    sign, so the reference does not depend on it)."""
    E = rng.standard_normal((max(1, n // 4), k + q))
    nz = rng.standard_normal(E.shape[0])
    F = E.copy()
    F[:, k:] *= -1.0
    return np.vstack([E, -E, F, -F]), np.concatenate([nz, -nz, nz, -nz])


def _weights(m, st, E: np.ndarray, noise: np.ndarray, fractions: np.ndarray,
             values: np.ndarray, xi: np.ndarray, wxi: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """Per sample (rows of ``E``: coordinates on E) and group: the weight ``e~ m1'_g`` of the
    step's matrix and ``e~^2 (v_g - m2_g^2)`` of its row noise (module docstring)."""
    S = np.hstack([st.a, st.L])
    F, _, m2, v = xi_moments(m.sigma, st.c, E @ S.T, xi, wxi)
    e = _evaluate(m.g, E[:, :m.k]) - F @ (fractions * values) + math.sqrt(m.delta) * noise
    sc = np.sqrt(st.c)
    m1p = m2 / np.where(sc > 0, sc, np.inf)[None, :]
    return e[:, None] * m1p, (e * e)[:, None] * np.maximum(v - m2**2, 0.0)


def network_bulk(sigma: str | Function, target: str, *, steps: int, alpha0: float,
                 eta: float | Sequence[float], delta: float = 0.0, readout: object = "constant",
                 size: int = DEVICE_SIZE, blocks: int = DEVICE_BLOCKS,
                 seed: int = DEVICE_SEED) -> GroupBulk:
    """The :class:`GroupBulk` of :func:`device_covariances`."""
    return GroupBulk(device_covariances(sigma, target, steps=steps, alpha0=alpha0, eta=eta,
                                        delta=delta, readout=readout, size=size, blocks=blocks,
                                        seed=seed)[0])


def device_scales(sigma: str | Function, target: str, **kw) -> np.ndarray:
    """Each block's mean variance outside E over the recursion's ``c_g`` (B x K)."""
    return device_covariances(sigma, target, **kw)[1]


def _factor_gram(S: np.ndarray) -> np.ndarray:
    """A K x q factor of ``S S^T`` (q the rank)."""
    u, s, _ = np.linalg.svd(S, full_matrices=False)
    q = int(np.sum(s > 1e-10 * max(1.0, s.max(initial=0.0))))
    return u[:, :q] * s[:q]


def coupled_device(sigma: str | Function, target: str, *, steps: int, alpha0: float,
                   eta: float | Sequence[float], delta: float = 0.0,
                   readout: object = "constant", size: int = DEVICE_SIZE,
                   blocks: int = DEVICE_BLOCKS, seed: int = DEVICE_SEED,
                   quad: Quadrature = DEFAULT_QUAD, n_ref: int = N_REF // 4,
                   split: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """``(sig, a, ecov, r)``: the device of :func:`device_covariances` carrying E too (the target
    coordinates and the spikes' outside parts built on the device's own batches, docs/
    DERIVATIONS.md §9.7): per block the normalised covariance outside E (B x K x n' x n'), the
    coupling vectors of the model's ``[V, T]`` coordinates to it (B x K x (r+k) x n') and the
    residual covariances on ``[V, T]`` (K x (r+k) x (r+k), from the groups' channels).
    ``split``: the device of 2B blocks of n/2 directions made of the same draws (each block's
    batches cut into two halves of its samples and outside directions; the partner of the
    extrapolation 2 r(n) - r(n/2), DERIVATIONS.md §9.9)."""
    m = mapping_inputs(sigma, target, steps=steps, alpha0=alpha0, eta=eta, delta=delta,
                       readout=readout, quad=quad)
    if 8.0 * max(round(alpha0 * size), 1) * (m.k + size) > MAX_DEVICE_BYTES:  # one batch
        raise ValueError(f"the network theory's sampled device at alpha0={alpha0:g} needs "
                         f"batches of {alpha0 * size:.3g} x {m.k + size} samples (more than "
                         f"{MAX_DEVICE_BYTES / 2**30:.0f} GiB); use a smaller alpha0 or "
                         "model='srf'")
    key = ("coupled", m.sigma, target, m.readout, float(alpha0), m.etas, m.delta, size, blocks,
           seed, quad, n_ref)
    try:
        hit = _CACHE.get((*key, bool(split)))
    except TypeError:
        key, hit = None, None
    if hit is not None:
        return hit
    if split and (size < 4 or size % 2):
        raise ValueError(f"a split device needs an even size >= 4, got {size}")
    path = _disk_path(key) if key is not None and not split else None
    outs = [kept] if (kept := _disk_read(path)) is not None else None
    if outs is None:
        with blas_threads():
            outs = _coupled_lanes(m, target, alpha0, size, blocks, seed, quad, n_ref, split)
        _disk_write(path, outs[0])
    for sp, out in zip((False, True)[:len(outs)], outs, strict=True):
        for arr in out[:3]:
            arr.flags.writeable = False
        if key is not None:
            _CACHE[(*key, sp)] = out
    return outs[int(bool(split))]


def _coupled_lanes(m, target, alpha0, size, blocks, seed, quad, n_ref, split) -> list:
    """The devices of :func:`coupled_device`: ``[whole]`` or ``[whole, split]``, the split
    one's lanes (half the samples and outside directions of each block) fed the whole block's
    draws, whose random stream is the same with or without them."""
    from asymptotics.network.groups import model_channels

    ng = network_groups(m.sigma, target, steps=m.steps, alpha0=alpha0, eta=m.etas,
                        delta=m.delta, readout=m.readout, quad=quad)
    k = m.k
    K = len(m.values)
    rng = np.random.default_rng(np.random.SeedSequence([seed, size, blocks, 7]))
    side = np.random.default_rng(np.random.SeedSequence([seed, size, blocks, 8]))
    n0 = max(1, int(round(alpha0 * size)))
    h, h0 = size // 2, n0 // 2
    stT = ng.states[m.steps]
    U_model, _, Q = stT.spiked_model()
    sig_ee = model_channels(stT, ng.cov[m.steps])
    outs = [([], [], []), ([], [], [])] if split else [([], [], [])]
    with Progress(blocks, "network theory: sampling the groups' device (once a setting)",
                  unit="blocks") as bar:  # (reports when stderr is not a terminal: >= 10 s)
        for _ in bar.iter(range(blocks)):
            lanes = [(np.repeat(np.eye(k + size)[None], K, axis=0), np.zeros((K, k + size)))]
            if split:
                lanes += [(np.repeat(np.eye(k + h)[None], K, axis=0), np.zeros((K, k + h)))] * 2
            for t in range(m.steps):
                X = rng.standard_normal((n0, k + size))
                noise = rng.standard_normal(n0)
                ref = []

                def reference(q, ref=ref):
                    if not ref:  # the whole block's draw, from the device's stream
                        ref.append((q, *_reference(rng, n_ref, k, q)))
                    q0, Er, nr = ref[0]
                    return (Er[:, :k + q], nr) if q <= q0 else _reference(side, n_ref, k, q)

                lanes[0] = _advance(m, ng, t, k, *lanes[0], X, noise, reference)
                for j in range(1, len(lanes)):
                    rows, cols = slice((j - 1) * h0, j * h0), slice(k + (j - 1) * h, k + j * h)
                    Xj = np.hstack([X[rows, :k], X[rows, cols]])
                    lanes[j] = _advance(m, ng, t, k, *lanes[j], Xj, noise[rows], reference)
            for j, (C, S) in enumerate(lanes):
                o = outs[min(j, 1)]
                for lst, x in zip(o, _block_out(C, S, k, stT, U_model, Q), strict=True):
                    lst.append(x)
    res = []
    for out_s, out_a, out_p in outs:
        ns = min(len(x[0]) for x in out_s)
        sig = np.array([[s_[:ns, :ns] for s_ in x] for x in out_s])
        a = np.array([[a_[:, :ns] for a_ in x] for x in out_a])
        expl = np.mean(np.array(out_p), axis=0)
        ecov = np.empty_like(sig_ee)
        for g in range(K):
            ev, evec = np.linalg.eigh(sig_ee[g] - expl[g])
            ecov[g] = (evec * np.maximum(ev, 0.0)) @ evec.T
        res.append((sig, a, ecov, U_model.shape[1]))
    return res


def _advance(m, ng, t: int, k: int, C: np.ndarray, S: np.ndarray, X: np.ndarray,
             noise: np.ndarray, reference) -> tuple[np.ndarray, np.ndarray]:
    """One step of a device block (module docstring): ``(C, S)`` after the step with batch
    ``X`` (its first k columns the target coordinates), ``reference(q)`` the reference sample
    of the weights' moments."""
    st, eta_t = ng.states[t], m.etas[t]
    values, fractions = np.asarray(m.values), np.asarray(m.fractions)
    xi, wxi = gauss_hermite(XI_NODES)
    n0, D0 = X.shape
    Lf = _factor_gram(S[:, k:])
    dev = type(st)(t, S[:, :k], Lf, st.c)
    Ex = np.hstack([X[:, :k], X[:, k:] @ (np.linalg.pinv(Lf) @ S[:, k:]).T]) \
        if Lf.shape[1] else X[:, :k]
    w, u = _weights(m, dev, Ex, noise, fractions, values, xi, wxi)
    Er, nr = reference(Lf.shape[1])
    wr, ur = _weights(m, dev, Er, nr, fractions, values, xi, wxi)
    F, m1, _, _ = xi_moments(m.sigma, st.c, X @ S.T, xi, wxi)
    e = _evaluate(m.g, X[:, :k]) - F @ (fractions * values) + math.sqrt(m.delta) * noise
    S_new = S + eta_t * values[:, None] * ((e[:, None] * m1).T @ X) / n0
    C = C.copy()
    for g in range(len(values)):
        wg = wr[:, g].mean() + (w[:, g] - w[:, g].mean()) * (
            wr[:, g].std() / max(w[:, g].std(), 1e-300))
        ug = u[:, g] * (ur[:, g].mean() / u[:, g].mean()) if u[:, g].mean() > 0 else u[:, g]
        Lg = np.eye(D0) + eta_t * values[g] * (X.T * wg) @ X / n0
        C[g] = Lg @ C[g] @ Lg.T + D0 * (eta_t * values[g] / n0) ** 2 * (X.T * ug) @ X
    return C, S_new


def _block_out(C: np.ndarray, S: np.ndarray, k: int, stT, U_model: np.ndarray,
               Q: np.ndarray) -> tuple[list, list, list]:
    """A block's normalised covariances outside E, coupling vectors and explained covariances
    on the model's ``[V, T]``: V from the device's spikes matched to the model's loadings (least
    squares, then the nearest orthonormal frame), T the rotated targets."""
    D0 = C.shape[1]
    Vd = np.linalg.pinv(S, rcond=1e-10) @ U_model
    uu, _, vt = np.linalg.svd(Vd, full_matrices=False)
    Vd = uu @ vt
    th = np.zeros((D0, k))
    th[:k] = Q
    T = th - Vd @ (Vd.T @ th)
    rho = np.linalg.norm(T, axis=0)
    T = np.where(rho > 1e-12, T / np.maximum(rho, 1e-300), 0.0)
    BE = np.hstack([Vd, T])
    span = np.hstack([np.eye(D0)[:, :k], S.T])
    us, ss, _ = np.linalg.svd(span, full_matrices=True)
    qe = int(np.sum(ss > 1e-10 * max(1.0, ss.max(initial=0.0))))
    Up = us[:, qe:]
    sb, ab, pb = [], [], []
    for g in range(C.shape[0]):
        Ct = C[g] / stT.c[g]
        Cp = Up.T @ Ct @ Up
        A = (BE.T @ Ct @ Up) @ np.linalg.inv(Cp)
        kap = Cp.shape[0] / np.trace(Cp)
        sb.append(0.5 * (Cp + Cp.T) * kap)
        ab.append(A / math.sqrt(kap))
        pb.append(A @ Cp @ A.T)
    return sb, ab, pb


def network_coupled(sigma: str | Function, target: str, **kw):
    """The :class:`asymptotics.network.coupling.CoupledChannels` of :func:`coupled_device`."""
    from asymptotics.network.coupling import CoupledChannels

    sig, a, ecov, r = coupled_device(sigma, target, **kw)
    return CoupledChannels(GroupBulk(sig), a, ecov, r, ecov.shape[1] - r)
