"""A polynomial target's residuals on few other-axes nodes, many spike nodes at a time
(docs/THEORY.md §12.4).

``coefficients.step_kernels.poly_e`` fills the residuals ``e = g(Uz + Rz) - f`` one spike node
(a row of ``e``) at a time, each monomial a pass over that row's other-axes nodes: where the
other axes have a handful of nodes (a polynomial target's exact rule: degree + 1 or + 2 nodes),
its passes are a few numbers long and their overhead is most of the work. :func:`poly_e_rows`
passes over :data:`BLOCK` numbers at a time (many rows side by side) there, each number
formed by the same operations in the same order (the monomials in order, each left to right,
then ``- f``): the same residuals bit for bit; ``poly_e`` itself from :data:`FEW` nodes on."""

from __future__ import annotations

import numpy as np

from asymptotics.coefficients.step_kernels import poly_e
from asymptotics.core.coldstart import kernel

#: other-axes nodes below which the rows are taken side by side, numbers per pass there
FEW, BLOCK = 8, 512


@kernel(cache=True, error_model="numpy")
def poly_e_rows(Uz: np.ndarray, RzT: np.ndarray, f: np.ndarray, lo: int, exps: np.ndarray,
                coefs: np.ndarray, e: np.ndarray) -> None:
    """Kernel: ``step_kernels.poly_e``'s residuals (its arguments), rows side by side when
    ``RzT`` has fewer than :data:`FEW` columns (``e`` C-contiguous), else by ``poly_e``."""
    k, nr = RzT.shape
    if nr >= FEW or nr == 0:
        poly_e(Uz, RzT, f, lo, exps, coefs, e)
        return
    B = BLOCK // nr
    z, m, ef = np.empty((k, B * nr)), np.empty(B * nr), e.reshape(-1)
    for i0 in range(0, e.shape[0], B):
        nb = min(B, e.shape[0] - i0)
        n, base = nb * nr, i0 * nr
        for d in range(k):
            for b in range(nb):
                u = Uz[d, lo + i0 + b]
                for j in range(nr):
                    z[d, b * nr + j] = u + RzT[d, j]
        for t in range(coefs.shape[0]):
            m[:n] = coefs[t]
            for d in range(k):
                zd = z[d]
                for _ in range(exps[t, d]):
                    for p in range(n):
                        m[p] *= zd[p]
            if t == 0:
                ef[base:base + n] = m[:n]
            else:
                for p in range(n):
                    ef[base + p] += m[p]
        for b in range(nb):
            fb = f[lo + i0 + b]
            for j in range(nr):
                ef[base + b * nr + j] -= fb
