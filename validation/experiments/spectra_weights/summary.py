"""The summary of validation/reports/SPECTRA_THEORY.md (module
:mod:`validation.experiments.spectra_theory`): the bulk's Kolmogorov distances, the outliers'
locations and overlaps within 3 s.e. over the rows of the theory each setting checks (the
default model), the k/p fits of the misses, the rows of a theory kept beside it (the sRF
surrogate of the network after two steps) on a line of their own, and the weights' mean-row
direction ``v_hat`` rows."""

from __future__ import annotations

import pandas as pd

from validation.experiments import spectra_sim


def summary(df: pd.DataFrame, checked: dict) -> list[str]:
    """The summary's lines of the report's rows ``df``; ``checked``: setting name -> the
    features' model it checks (:func:`validation.experiments.spectra_theory.features_model`)."""
    out: list[str] = []
    side = _beside(df, checked)
    ks, locs, ovl_all = _kinds(df[~side])
    vhat = ovl_all[ovl_all.quantity.str.endswith("(v_hat)")]
    ovl = ovl_all.drop(vhat.index)
    zs = _zs
    miss = ovl[zs(ovl) > 3]
    keys = ["setting", "of", "quantity"]
    scans = [spectra_sim.fit_text(f"{k[0]}, {k[1]}, {k[2].split(': ')[-1]}: offset", g.beta * g.d,
                       g.sim - g.theory, g.se)
             for k, g in ovl.groupby(keys, sort=False)
             if len(g) > 1 and k in set(map(tuple, miss[keys].to_numpy()))]
    out += ["## Summary", "",
            f"- Bulk: worst Kolmogorov distance over all draws {ks.worst.max():.4f} "
            f"({int((ks.worst <= 0.02).sum())} of {len(ks)} cells with every draw <= 0.02).",
            f"- Outlier locations: {int((zs(locs) <= 3).sum())} of {len(locs)} within 3 s.e. "
            f"(largest |z| {zs(locs).max():.1f}).",
            f"- Overlaps: {int((zs(ovl) <= 3).sum())} of {len(ovl)} within 3 s.e. (largest |z| "
            f"{zs(ovl).max():.1f}); largest |sim - theory| {(ovl.sim - ovl.theory).abs().max():.2g}"
            + (f", among the misses {(miss.sim - miss.theory).abs().max():.2g} (squared overlaps "
               f"{miss.theory.min():.4f}-{miss.theory.max():.4f}, standard errors "
               f"{miss.se.min():.1g}-{miss.se.max():.1g}): " + ", ".join(
                   f"{r.setting} d = {r.d} {r.of} {r.quantity.split(': ')[-1]}"
                   for _, r in miss.iterrows()) if len(miss) else "") + ".",
            *(f"  - {t}." for t in scans)]
    out += _beside_lines(df[side])
    if len(vhat):
        out.append(f"- The mean-row direction `v_hat` (the weights' `learned 1 (v_hat)` rows, not "
                   f"counted above): {int((zs(vhat) <= 3).sum())} of {len(vhat)} within 3 s.e. "
                   f"(largest |z| {zs(vhat).max():.1f}); the network's weights' `learned 1` "
                   f"(against `v_pop`): {int((zs(_learned(ovl)) <= 3).sum())} of "
                   f"{len(_learned(ovl))}.")
    return out


def _zs(x: pd.DataFrame) -> pd.Series:
    return ((x.sim - x.theory) / x.se).abs()


def _kinds(df: pd.DataFrame) -> tuple:
    """(bulk KS rows, outlier location rows, overlap rows) of ``df``."""
    return (df[df.quantity == "KS bulk"],
            df[df.quantity.str.startswith("outlier") & ~df.quantity.str.contains("overlap")],
            df[df.quantity.str.contains("overlap")])


def _beside(df: pd.DataFrame, checked: dict) -> pd.Series:
    """The features' rows of a theory kept beside the one a setting checks (``checked``:
    setting -> model; the sRF surrogate of the simulated network after two steps)."""
    return pd.Series([o == "features" and n in checked and m != checked[n]
                      for n, o, m in zip(df.setting, df["of"], df.model, strict=True)],
                     index=df.index, dtype=bool)


def _beside_lines(b: pd.DataFrame) -> list[str]:
    """The summary's line of the rows of :func:`_beside` (per setting and model)."""
    out = []
    for (name, model), g in b.groupby(["setting", "model"], sort=False):
        ks, locs, ovl = _kinds(g)
        miss = ovl[_zs(ovl) > 3]
        fits = [spectra_sim.fit_text(f"{q.split(': ')[-1]}: offset", h.beta * h.d,
                                     h.sim - h.theory, h.se)
                for q, h in miss.groupby("quantity", sort=False) if len(h) > 1]
        out.append(
            f"- Beside it, not counted above: {name}, the features' `{model}` law (d = "
            f"{', '.join(str(d) for d in g.d.unique())}): bulk Kolmogorov distance worst draw "
            f"{ks.worst.max():.4f}; outlier locations {int((_zs(locs) <= 3).sum())} of "
            f"{len(locs)} within 3 s.e.; overlaps {int((_zs(ovl) <= 3).sum())} of {len(ovl)} "
            f"(largest |z| {_zs(ovl).max():.1f}"
            + ("; misses: " + ", ".join(f"d = {r.d} {r.quantity.split(': ')[-1]} z = "
                                         f"{(r.sim - r.theory) / r.se:+.1f}"
                                         for _, r in miss.iterrows()) if len(miss) else "")
            + ")" + "".join(f"; {t}" for t in fits) + ".")
    return out


def _learned(ovl: pd.DataFrame) -> pd.DataFrame:
    """The network's weights' learned-direction overlap rows (measured against v_pop)."""
    return ovl[(ovl.simulated == "network") & (ovl["of"] == "weights")
               & ovl.quantity.str.endswith("overlap learned 1")]
