"""softplus and its derivative at the pre-activations of an xi rule, in one compiled pass
(docs/THEORY.md §12.4).

``xi_lines.xi_direct`` sums the registered softplus over an xi rule at the pre-activations
``sc xi_j + M_i`` (the Chebyshev fits of the steps' xi-moments, a few hundred thousand per step
on a three-axis lattice). numpy forms them in about ten passes over the (n, m) array
(``xi_lines._softplus_fdf``: ``exp(-|z|)``, ``log1p``, the maximum, the logistic's two
branches). :func:`pairs` forms both arrays in one pass by the same formulas, operation by
operation (``sc xi_j`` first, then ``+ M_i``; the same exp and log1p of the C library), where
sigma saturates the values they round to without them: the same numbers bit for bit; the sums
over the rule stay numpy's."""

from __future__ import annotations

import math

import numpy as np

from asymptotics.core import coldstart
from asymptotics.core.coldstart import kernel

#: beyond |z| > SATURATED, e = e^-|z| < 2^-53: softplus and the logistic round to z and 1
#: (above) or to e and e (below), as ``coefficients.step_quadrature._fdf`` takes them
SATURATED = 37.0


@kernel(cache=True, error_model="numpy")
def softplus_pairs(sc: float, M: np.ndarray, xi: np.ndarray, s: np.ndarray, ds: np.ndarray
                   ) -> None:
    """Kernel: ``s[i, j] = softplus(z)`` and ``ds[i, j] = sigmoid(z)`` at ``z = sc xi[j] + M[i]``
    as ``xi_lines._softplus_fdf`` forms them: ``e = exp(-|z|)``, ``log1p(e) + max(z, 0)`` and
    ``(1 if z >= 0 else e) / (1 + e)``; beyond ``|z| >`` :data:`SATURATED` the values those
    formulas round to (z and 1 above; e^z twice below: one exponential, or none)."""
    n, m = M.shape[0], xi.shape[0]
    for i in range(n):
        mi = M[i]
        for j in range(m):
            z = sc * xi[j] + mi
            if z > SATURATED:  # e < 2^-53: log1p(e) + z is z, 1 / (1 + e) is 1
                s[i, j], ds[i, j] = z, 1.0
            elif z < -SATURATED:  # log1p(e) is e, e / (1 + e) is e
                e = math.exp(z)
                s[i, j], ds[i, j] = e, e
            else:
                e = math.exp(-abs(z))
                s[i, j] = math.log1p(e) + (z if z > 0.0 else 0.0)
                ds[i, j] = (1.0 if z >= 0 else e) / (1.0 + e)


def pairs(sc: float, M: np.ndarray, xi: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``(softplus, sigmoid)`` at ``sc xi[None, :] + M[:, None]`` ((n, m) each) by
    :func:`softplus_pairs`; None while the kernel is not compiled (its compilation queued: the
    caller's numpy path runs)."""
    M = np.ascontiguousarray(M, dtype=np.float64)
    xi = np.ascontiguousarray(xi, dtype=np.float64)
    s, ds = np.empty((M.shape[0], xi.shape[0])), np.empty((M.shape[0], xi.shape[0]))
    args = (float(sc), M, xi, s, ds)
    tiny = (float(sc), M[:1], xi[:1], np.empty((1, 1)), np.empty((1, 1)))
    if M.shape[0] == 0 or not coldstart.kernel_ready(
            softplus_pairs, args, lambda: softplus_pairs(*tiny), compile_mode_ready=True):
        return None
    softplus_pairs(*args)
    return s, ds
