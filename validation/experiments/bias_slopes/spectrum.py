"""Sampled spectra against their predictions: the sRF surrogate's outliers (the features' mean
outlier and the weights' learned outlier, both divided by d, and the latter's overlap with the
target; tanh/tanh, alpha0 = 2, eta = 2, alpha = 2, beta = 0.5) against
:func:`asymptotics.spectrum` at the simulated d (docs/THEORY.md §16), and the atoms of
Omega = W Pi W^T for rows on the sphere (p = d/2, c = 1.4) against the Marchenko-Pastur measure
(§6): its moments at (s0, s1) = (0.3, 0.9), the mean of F and of the eigenvalues."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SRF = dict(sigma="tanh", target="tanh", alpha0=2.0, eta=2.0)
SRF_SHAPE = dict(alpha=2.0, beta=0.5)
MP_C, MP_S = 1.4, (0.3, 0.9)


@dataclass(frozen=True)
class SpectrumSetting:
    """``kind``: ``'srf_outliers'`` or ``'mp_atoms'``."""

    name: str
    kind: str


SPECTRA = (SpectrumSetting("srf-outliers-tanh", "srf_outliers"),
           SpectrumSetting("mp-atoms-0.5", "mp_atoms"))


def spectrum_draw(s: SpectrumSetting, d: int, rng: np.random.Generator) -> dict[str, float]:
    """The quantities of one draw at dimension ``d``."""
    if s.kind == "srf_outliers":
        import asymptotics
        from validation.experiments.spectra_sim import simulate_srf

        sp = asymptotics.srf_mapping(SRF["sigma"], SRF["target"], alpha0=SRF["alpha0"],
                                     eta=SRF["eta"])
        D = simulate_srf(sigma=SRF["sigma"], r=sp.r, c=sp.c, gamma=sp.gamma, d=d,
                         seed=int(rng.integers(2**31)), **SRF_SHAPE)
        return {"features_mean_outlier/d": float(D.f_eig[-1]) / d,
                "weights_outlier/d": float(D.w_eig[-1]) / d,
                "weights_outlier_target_overlap": float(D.w_overlaps["target 1"][0])}
    from asymptotics.measures.spectral import empirical_measure

    p = d // 2
    W0 = rng.standard_normal((p, d))
    W0 /= np.linalg.norm(W0, axis=1, keepdims=True)
    v = rng.standard_normal(d)
    v /= np.linalg.norm(v)
    t = rng.standard_normal(d)
    t -= (t @ v) * v
    t /= np.linalg.norm(t)
    emp = empirical_measure(W0, v, t, MP_C)
    out = {f"moment{j}": float(m) for j, m in enumerate(emp.moments(*MP_S)[:5])}
    out.update(F_mean=float(np.mean(emp.F)), rho_mean=float(np.mean(emp.rho)))
    return out


def spectrum_theory(s: SpectrumSetting, d: int) -> dict[str, float]:
    """The predictions at dimension ``d`` (the sRF outliers at the simulated d; MP at p/d)."""
    if s.kind == "srf_outliers":
        import asymptotics

        kw = dict(**SRF, **SRF_SHAPE, d=d)
        lf, lw = asymptotics.spectrum("features", **kw), asymptotics.spectrum("weights", **kw)
        return {"features_mean_outlier/d": float(lf.outliers[0].location) / d,
                "weights_outlier/d": float(lw.outliers[0].location) / d,
                "weights_outlier_target_overlap": float(lw.outliers[0].overlaps["target 1"])}
    from asymptotics.measures.spectral import marchenko_pastur

    p = d // 2
    md = marchenko_pastur(p / d, MP_C).moments(*MP_S)[:5]
    out = {f"moment{j}": float(m) for j, m in enumerate(md)}
    out.update(F_mean=p / d * MP_C, rho_mean=MP_C)
    return out
