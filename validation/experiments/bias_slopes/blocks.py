"""The deterministic block resolvent of the K-group model (docs/THEORY.md §10.4) against its
exact p x p evaluation (§10.3, :func:`asymptotics.spiked.empirical.exact_quantities`) with
sampled bulks (rows on the sphere) and sampled spike / target directions: every entry of
(V1, V2, Q1, Q2) without the spike fields ("quiet") and of (Q1, Q2, zeta, psi) with them, per
draw. The conjugate variables (the hats) are fixed by the setting's seed, as in
``tests/test_spiked_theory.py``; the draws of G and of the directions are the repetition's."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BlockSetting:
    """K groups, r spike and k target directions, width ratio beta."""

    name: str
    K: int
    r: int
    k: int
    beta: float


BLOCKS = (BlockSetting("blocks-K2r2k1-b1", 2, 2, 1, 1.0),
          BlockSetting("blocks-K3r2k2-b0.7", 3, 2, 2, 0.7),
          BlockSetting("blocks-K3r1k2-b1.5", 3, 1, 2, 1.5))
QUIET = ("V1", "V2", "Q1", "Q2")
FIELDS = ("Q1", "Q2", "zeta", "psi")


def hats(s: BlockSetting, d: int, lam: float = 0.05):
    """``(rng, labels, fractions, kw)``: the setting's conjugate variables drawn from the seed
    10 K + r (the labels at p = beta d), and the generator, which then draws the bulks."""
    from asymptotics.spiked.empirical import group_labels

    rng = np.random.default_rng(10 * s.K + s.r)
    p = int(s.beta * d)
    labels = group_labels(rng.dirichlet(np.ones(s.K) * 3), p)
    pi = np.bincount(labels, minlength=s.K) / p
    C = rng.standard_normal((s.K, s.K))
    C2 = rng.standard_normal((s.K, s.K))
    kw = dict(lam=lam, Vhat1=0.7 * C @ C.T, Vhat2=rng.uniform(0.2, 1.0, s.K),
              Qhat1=0.3 * C2 @ C2.T, Qhat2=rng.uniform(0.1, 0.5, s.K),
              zetahat=rng.standard_normal((s.K, s.r)), psihat=rng.standard_normal((s.K, s.k)))
    return rng, labels, pi, kw


def _quiet(kw: dict) -> dict:
    return {**kw, "zetahat": 0 * kw["zetahat"], "psihat": 0 * kw["psihat"]}


def _flat(prefix: str, q: dict, names: tuple[str, ...]) -> dict[str, float]:
    out = {}
    for n in names:
        a = np.asarray(q[n], dtype=float)
        for idx in np.ndindex(a.shape):
            out[f"{prefix}{n}[{','.join(map(str, idx))}]"] = float(a[idx])
    return out


def block_draw(s: BlockSetting, d: int, rng: np.random.Generator) -> dict[str, float]:
    """Every entry of the exact quantities for one draw of G (p = beta d rows on the sphere)
    and of the r + k directions (``rng``)."""
    from asymptotics.spiked.empirical import exact_quantities, sphere_rows

    _, labels, _, kw = hats(s, d)
    G = sphere_rows(rng, int(s.beta * d), d)
    Q, _ = np.linalg.qr(rng.standard_normal((d, s.r + s.k)))
    V, T = Q[:, :s.r], Q[:, s.r:]
    return {**_flat("quiet.", exact_quantities(G, labels, V, T, **_quiet(kw)), QUIET),
            **_flat("", exact_quantities(G, labels, V, T, **kw), FIELDS)}


def block_theory(s: BlockSetting, d: int) -> dict[str, float]:
    """The deterministic quantities at the fractions of the labels at p = beta d."""
    from asymptotics.spiked.empirical import deterministic_quantities

    _, _, pi, kw = hats(s, d)
    return {**_flat("quiet.", deterministic_quantities(beta=s.beta, fractions=pi, **_quiet(kw)),
                    QUIET),
            **_flat("", deterministic_quantities(beta=s.beta, fractions=pi, **kw), FIELDS)}
