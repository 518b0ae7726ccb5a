"""The staircase prediction of what a few giant steps learn from a multi-index target
(Dandi et al. 2023, arXiv:2305.18270; docs/THEORY.md §8), from its Hermite expansion
(:mod:`asymptotics.coefficients.hermite`), and the text report of ``python -m asymptotics hermite``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from asymptotics.coefficients.hermite import (
    HermiteExpansion,
    canonical_basis,
    default_nodes,
    hermite_expansion,
    row_space,
    tensor_grid,
)
from asymptotics.coefficients.targets import MAX_GRID_POINTS, lambdify

# ------------------------------------------------------------------------------------------------
# staircase


@dataclass(frozen=True)
class StaircasePrediction:
    """What giant steps learn (module docstring). Bases are orthonormal rows in ``R^k``.

    ``steps[t]``: directions added at step ``t + 1`` with ``n ~ d`` (the staircase stops at the
    first empty step); ``one_step[l]``: directions reachable by one step with ``n ~ d^l``
    (``l = 1..max degree``); ``never``: relevant directions the staircase never reaches."""

    expression: str
    k: int
    leap_index: int | None
    steps: tuple[np.ndarray, ...]
    learned: np.ndarray
    relevant: np.ndarray
    never: np.ndarray
    one_step: tuple[tuple[int, np.ndarray], ...]


def _complement(Q: np.ndarray, k: int) -> np.ndarray:
    """Orthonormal rows spanning the orthogonal complement of the rows of ``Q``."""
    if Q.shape[0] == 0:
        return np.eye(k)
    _, s, vt = np.linalg.svd(Q, full_matrices=True)
    return vt[Q.shape[0]:]


def linear_connection_matrix(g: Callable, Q: np.ndarray, k: int,
                             nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """``M = E_u[c(u) c(u)^T]``, ``c(u) = E_v[g(Q^T u + P^T v) v]`` (``P`` the complement of the
    learned rows ``Q``), in the ``P`` coordinates, by tensor Gauss-Hermite quadrature;
    returns ``(M, P)``."""
    P = _complement(Q, k)
    r, s = Q.shape[0], P.shape[0]
    if nodes**k > MAX_GRID_POINTS:
        raise ValueError(f"quadrature grid nodes^k = {nodes}^{k} exceeds {MAX_GRID_POINTS}")
    u, wu = tensor_grid(r, nodes)
    v, wv = tensor_grid(s, nodes)
    Z = (u @ Q)[:, None, :] + (v @ P)[None, :, :]  # (Nu, Nv, k)
    G = g(Z)
    if not np.all(np.isfinite(G)):
        raise ValueError("target is not finite on the Gaussian quadrature grid")
    c = np.einsum("uv,v,vj->uj", G, wv, v)  # (Nu, s)
    return np.einsum("u,ui,uj->ij", wu, c, c), P


def staircase(expansion: HermiteExpansion, *, max_steps: int | None = None,
              rtol: float = 1e-9, nodes: int | None = None) -> StaircasePrediction:
    """Staircase (n ~ d, step by step) and one-step (n ~ d^l) predictions for ``expansion``."""
    k = expansion.k
    import sympy as sp

    syms = sp_symbols(k)
    g = lambdify(expansion.expr, syms)
    degree = sp.Poly(expansion.expr, *syms).total_degree() if expansion.exact else None
    N = nodes or default_nodes(k, degree)
    var = expansion.norm2 - (next((t.coefficient for t in expansion.terms
                                   if t.degree == 0), 0.0)) ** 2
    scale = max(var, 1e-300)
    learned = np.zeros((0, k))
    steps: list[np.ndarray] = []
    limit = k if max_steps is None else int(max_steps)
    for _ in range(limit):
        if learned.shape[0] == k:
            break
        M, P = linear_connection_matrix(g, learned, k, N)
        vals, vecs = np.linalg.eigh((M + M.T) / 2)
        new = vecs[:, vals > rtol * scale].T @ P
        if new.shape[0] == 0:
            break
        new = canonical_basis(row_space(new, 1e-9))
        steps.append(new)
        learned = canonical_basis(row_space(np.vstack([learned, new]), 1e-9))
    relevant = expansion.relevant_subspace(rtol)
    never = relevant - (relevant @ learned.T) @ learned if learned.shape[0] else relevant
    if never.size and np.linalg.norm(never, 2) > 1e-6:
        never = row_space(never, 1e-6)
    else:
        never = np.zeros((0, k))
    one: list[tuple[int, np.ndarray]] = []
    reach = np.zeros((0, k))
    for l in range(1, expansion.max_degree + 1):
        V = expansion.subspace(l, rtol)
        if V.shape[0]:
            reach = row_space(np.vstack([reach, V]), 1e-9)
        one.append((l, canonical_basis(reach)))
    return StaircasePrediction(expansion.expression, k, expansion.leap_index, tuple(steps),
                               learned, relevant, canonical_basis(never), tuple(one))


def sp_symbols(k: int) -> tuple[object, ...]:
    """The real sympy symbols ``z1..zk`` used by :func:`parse_target`."""
    import sympy as sp

    return tuple(sp.Symbol(f"z{j}", real=True) for j in range(1, k + 1))


def describe(B: np.ndarray) -> str:
    """``theta1, theta2`` for axis-aligned rows, else ``0.707*theta1 + 0.707*theta2; ...``."""
    if B.shape[0] == 0:
        return "none"
    rows = []
    for row in B:
        nz = np.flatnonzero(np.abs(row) > 1e-9)
        if len(nz) == 1 and abs(abs(row[nz[0]]) - 1) < 1e-9:
            rows.append(f"theta{nz[0] + 1}")
        else:
            rows.append(" + ".join(f"{row[j]:.4g}*theta{j + 1}" for j in nz).replace("+ -", "- "))
    return ", ".join(rows) if all(r.startswith("theta") for r in rows) else "; ".join(rows)


# ------------------------------------------------------------------------------------------------
# the report of the command line (asymptotics.cli.hermite)


def report(text: str, *, max_degree: int | None = None, nodes: int | None = None,
           tol: float = 1e-9) -> str:
    """The text printed by ``python -m asymptotics hermite``."""
    ex = hermite_expansion(text, max_degree=max_degree, nodes=nodes, tol=tol)
    sc = staircase(ex)
    how = "polynomial, exact (sympy)" if ex.exact else (
        f"not a polynomial: Gauss-Hermite quadrature, {ex.nodes} nodes per axis, degrees <= "
        f"{ex.max_degree}, coefficients below tol*|g| = {tol:g}*|g| dropped")
    lines = [f"target: {ex.expression}",
             f"variables: {', '.join(ex.variables)} (k={ex.k}, z_j = <theta_j, x>); {how}",
             "convention: g = sum_alpha c_alpha prod_j He_alpha_j(z_j) = sum_l <C_l, He_l(z)>/l!, "
             "He_n probabilists' Hermite, C_l = E[grad^l g]",
             f"expansion: g = {ex.as_text()}"]
    for l in ex.degrees:
        labels = [t.label() + " * " + (t.exact if t.exact is not None else f"{t.coefficient:.6g}")
                  for t in ex.terms if t.degree == l]
        sub = describe(ex.subspace(l)) if l else "-"
        rank = ex.subspace(l).shape[0]
        lines.append(f"  degree {l}: |C_{l}|_F={ex.tensor_norm(l):.6g}  rank={rank}"
                     f"  subspace: {sub}  terms: {'; '.join(labels)}")
    lines.append(f"leap_index={ex.leap_index if ex.leap_index is not None else 'none'}")
    lines.append("one step with n ~ d^l (learning rate eta = eta_tilde p d^((l-1)/2)):")
    for l, reach in sc.one_step:
        note = ""
        if ex.leap_index is None or l < ex.leap_index:
            note = "  (nothing: overlaps stay O(d^-1/2))"
        elif l == ex.leap_index:
            note = "  (the leap-index subspace)"
        lines.append(f"  l={l}: reachable {describe(reach)}{note}")
    lines.append("staircase with n ~ d (fresh batch per step):")
    for t, new in enumerate(sc.steps, start=1):
        lines.append(f"  step {t}: learns {describe(new)}")
    if sc.learned.shape[0] < ex.k or not sc.steps:
        lines.append(f"  step {len(sc.steps) + 1}: nothing new (the staircase stops)")
    else:
        lines.append(f"  all k={ex.k} directions learned after {len(sc.steps)} step(s)")
    lines.append(f"staircase_steps={len(sc.steps)}")
    lines.append(f"learned_with_n~d: {describe(sc.learned)}")
    lines.append(f"never_learned_with_n~d: {describe(sc.never)}")
    return "\n".join(lines)
