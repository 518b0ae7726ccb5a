"""The investigation notes of ``validation/REPORT.md``, rendered from the store's numbers.

The notes (``validation/report_notes_d{d}.md``) are markdown templates: every number in them is a
placeholder ``{{ expression }}`` evaluated on the aggregated store, and every qualitative claim
("all above the theory", "halves with each doubling of d") is an assertion
``{{! expression }}`` that renders to nothing and must hold (``{{= name = expression }}``
defines a name for the placeholders after it). :func:`render` fails with the claims
that no longer hold, so a report regenerated from moved numbers cannot repeat stale prose.
Numbers that do not come from the store (a benchmark, a test) are named with their source.

Names an expression can use (:func:`namespace`): the frames ``main`` (the planned repetitions
at ``d``, one row per point: ``sim_mean``, ``sim_se``, ``theory``, ``z``, ``rel_gap``),
``misses`` (its srf/rf points with ``|z| > 3``), ``confirm`` (the confirmation repetitions),
``pooled`` (every repetition at ``d``), ``agg`` (the planned repetitions at every d), the
helpers of :class:`Context` and ``len, min, max, abs, all, any, round, sorted, set, sum, int,
float, str, zip``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..campaign.template import num, pct, render, signed, span

__all__ = ["Context", "Gap", "num", "one", "pct", "render", "sel", "signed", "span"]


@dataclass(frozen=True)
class Gap:
    """Relative gap (sim - theory) / theory averaged over the alpha x lambda points of each
    repetition: mean and standard error over ``n`` repetitions."""

    mean: float
    se: float
    n: int

    def __str__(self) -> str:
        return f"{self.mean:+.1%} ± {self.se:.1%}"


def sel(frame, key=None, model=None, **eq):
    """Rows of ``frame`` with ``key`` (one or a list), ``model`` and columns equal to ``eq``."""
    mask = np.ones(len(frame), dtype=bool)
    if key is not None:
        mask &= frame["key"].isin([key] if isinstance(key, str) else list(key)).to_numpy()
    if model is not None:
        mask &= frame["model"].isin([model] if isinstance(model, str) else list(model)
                                    ).to_numpy()
    for col, v in eq.items():
        mask &= np.isclose(frame[col], v) if isinstance(v, float) else (frame[col] == v)
    return frame[mask]


def one(frame):
    """The only row of ``frame``."""
    if len(frame) != 1:
        raise ValueError(f"expected one row, got {len(frame)}")
    return frame.iloc[0]


class Context:
    """The aggregated store at ``d`` and the helpers the notes use."""

    def __init__(self, store, agg, d: int, seeds: int, pooled=None) -> None:
        from .campaign import aggregate, matrix_settings

        self.store, self.d, self.seeds = store, d, seeds
        keys = {ms.key for ms in matrix_settings()}
        self.main = agg[(agg["d"] == d) & agg["key"].isin(keys)]
        srf = self.main[self.main["model"] != "network"]
        self.misses = srf[srf["z"].abs() > 3]
        conf = store[(store["rep"] >= seeds) & (store["d"] == d)]
        self.confirm = aggregate(conf) if len(conf) else self.main.iloc[:0]
        # every repetition at d (``pooled``: the caller's aggregate of the whole store, reused)
        self.pooled = (aggregate(store[store["d"] == d]) if pooled is None
                       else pooled[pooled["d"] == d])
        self.agg = agg
        first = agg.drop_duplicates(["key", "alpha", "lam"])
        # the sRF theory (p = infinity) of every point: the notes measure each model against it
        self.theory = {(r.key, r.alpha, r.lam): r.theory_srf for r in first.itertuples()}

    def gap(self, key: str, model: str = "srf", d: int | None = None,
            reps: str = "all") -> Gap:
        """:class:`Gap` of a setting (``reps``: ``all``, ``planned`` or ``confirm``)."""
        s = self.store
        s = s[(s["key"] == key) & (s["model"] == model) & (s["d"] == (d or self.d))]
        if reps == "planned":
            s = s[s["rep"] < self.seeds]
        elif reps == "confirm":
            s = s[s["rep"] >= self.seeds]
        if not len(s):
            raise ValueError(f"no {model} repetitions of {key!r} at d = {d or self.d}")
        th = np.array([self.theory[(k, a, lam)] for k, a, lam in
                       zip(s["key"], s["alpha"], s["lam"], strict=True)])
        per_rep = ((s["risk"] - th) / th).groupby(s["rep"]).mean()
        n = len(per_rep)
        se = float(per_rep.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
        return Gap(float(per_rep.mean()), se, n)

    def gap_table(self, keys, ds=None, model: str = "srf") -> str:
        """A markdown table of :meth:`gap` (all repetitions, their count in brackets) of the
        settings ``keys`` at the dimensions ``ds`` (default: the d-scaling ones)."""
        from .campaign import D_SCALING

        ds = tuple(ds or D_SCALING)
        lines = [f"| setting ({model}) | " + " | ".join(f"d = {x}" for x in ds) + " |",
                 "|---|" + "---|" * len(ds)]
        for k in keys:
            cells = [f"{g} ({g.n})" if self.has(k, model, x) and (g := self.gap(k, model, x))
                     else "–" for x in ds]
            lines.append(f"| {k} | " + " | ".join(cells) + " |")
        return "\n".join(lines)

    def miss_settings(self, model: str | None = None) -> list[str]:
        """Settings with a miss, most misses first."""
        m = self.misses if model is None else self.misses[self.misses["model"] == model]
        return m.groupby("key").size().sort_values(ascending=False, kind="stable").index.tolist()

    def mean_gap(self, keys, d: int | None = None, model: str = "srf") -> Gap:
        """The mean of the settings' gaps, its s.e. from theirs (independent settings)."""
        gs = [self.gap(k, model, d) for k in keys if self.has(k, model, d or self.d)]
        se = math.sqrt(sum(g.se**2 for g in gs)) / len(gs)
        return Gap(float(np.mean([g.mean for g in gs])), se, len(gs))

    def confz(self, key: str, model: str = "srf"):
        """Confirmation z of a setting at the points where its planned repetitions missed."""
        m = self.misses[(self.misses["key"] == key) & (self.misses["model"] == model)]
        c = self.confirm
        out = []
        for r in m.itertuples():
            hit = c[(c["key"] == key) & (c["model"] == model) & np.isclose(c["alpha"], r.alpha)
                    & np.isclose(c["lam"], r.lam)]
            out += hit["z"].tolist()
        if not out:
            raise ValueError(f"no confirmation repetitions of {key!r}")
        return np.array(out)

    def spike(self, key: str):
        """The sRF mapping ``(r, c, gamma, rho, ...)`` of a setting (THEORY.md §3)."""
        from asymptotics import srf_mapping

        r = self.agg[self.agg["key"] == key].iloc[0]
        return srf_mapping(r.sigma, r.target, alpha0=r.alpha0, eta=r.eta)

    def gamma(self, key: str) -> float:
        """The spike overlap gamma of the sRF mapping of a setting (THEORY.md §3)."""
        return self.spike(key).gamma

    def core_hours(self, estimator: str | None = None, target=None, d: int | None = None
                   ) -> float:
        """Core-hours of the repetitions at ``d`` (of an estimator, of targets)."""
        s = self.store[self.store["d"] == (d or self.d)]
        if estimator:
            s = s[s["estimator"] == estimator]
        if target is not None:
            s = s[s["target"].isin([target] if isinstance(target, str) else target)]
        return float(s.drop_duplicates(["key", "model", "rep"])["seconds"].sum() / 3600)

    def seconds_per_rep(self, key: str, model: str) -> float:
        s = self.store[(self.store["d"] == self.d) & (self.store["key"] == key)
                       & (self.store["model"] == model)]
        return float(s.drop_duplicates("rep")["seconds"].mean())

    def spread(self, estimator: str, target=None):
        """Per-point standard deviation over the repetitions of one test-error estimator."""
        s = self.store[(self.store["d"] == self.d) & (self.store["estimator"] == estimator)]
        if target is not None:
            s = s[s["target"].isin([target] if isinstance(target, str) else target)]
        g = s.groupby(["key", "model", "alpha", "lam"])["risk"]
        return g.std(ddof=1)[g.count() >= 2]

    def has(self, key: str, model: str, d: int) -> bool:
        s = self.store
        return bool(((s["key"] == key) & (s["model"] == model) & (s["d"] == d)).any())

    def namespace(self) -> dict[str, Any]:
        from scipy import stats

        names: dict[str, Any] = dict(
            main=self.main, misses=self.misses, confirm=self.confirm, pooled=self.pooled,
            agg=self.agg, spike=self.spike,
            d=self.d, seeds=self.seeds, gap=self.gap, has=self.has, pct=pct, num=num,
            gap_table=self.gap_table, miss_settings=self.miss_settings, sel=sel, one=one,
            mean_gap=self.mean_gap, confz=self.confz, gamma=self.gamma,
            core_hours=self.core_hours, seconds_per_rep=self.seconds_per_rep,
            spread=self.spread,
            signed=signed, span=span, np=np, math=math,
            chance=2 * stats.t.sf(3, self.seeds - 1) * len(self.main[
                self.main["model"] != "network"]))
        for f in (len, min, max, abs, all, any, round, sorted, set, sum, int, float, str, zip):
            names[f.__name__] = f
        return names


