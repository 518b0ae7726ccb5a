"""The rows' xi moments of relu (:func:`asymptotics.network.rowvar._xi_direct`, docs/
DERIVATIONS.md §12) as one numba kernel. relu' is the indicator of the nodes where the
pre-activation ``m + sc xi`` is positive, a tail of the (ascending) rule for ``sc > 0``: every
moment is a compensated tail sum of the rule's weights times a power of xi, found per shift by a
binary search, instead of sums over all ``shifts x nodes`` (2001 x 40001 on a large spike
lattice). The same rule and the same nodes above the kink (the test is the direct sums' own,
``m + fl(sc xi) > 0``); the numbers agree with the direct sums to rounding."""

from __future__ import annotations

import numpy as np

from asymptotics.coefficients.quadrature import tail_sums
from asymptotics.core.coldstart import kernel

#: the columns of :func:`relu_moments`, in the order of ``rowvar._xi_direct``'s keys
KEYS = ("F", "m1", "m2", "ex2", "ex3", "s2", "s2x", "s2x2", "a3", "a3x", "a4")


@kernel(cache=True, error_model="numpy")
def relu_moments(m: np.ndarray, sc: float, xi: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Kernel: the :data:`KEYS` moments of relu at every shift ``m`` over the rule ``(xi, w)``
    (xi ascending, sc > 0): with ``S_k`` / ``B_k`` the sums of ``w xi^k`` over the nodes above /
    below the kink, ``p = S_0``: F = m S_0 + sum above of ``w sc xi``, m1 = s2 = p, m2 = s2x =
    S_1, ex2 = s2x2 = S_2, ex3 = S_3, a3 = (1-p)^3 S_0 - p^3 B_0, a3x = (1-p)^3 S_1 - p^3 B_1,
    a4 = (1-p)^4 S_0 + p^4 B_0."""
    n, q = m.shape[0], xi.shape[0]
    a = sc * xi
    terms = np.empty((5, q))
    for j in range(q):
        terms[0, j] = w[j]
        terms[1, j] = w[j] * xi[j]
        terms[2, j] = terms[1, j] * xi[j]
        terms[3, j] = terms[2, j] * xi[j]
        terms[4, j] = w[j] * a[j]
    above, below = tail_sums(terms)  # over the nodes j.. and < j
    out = np.empty((n, 11))
    for i in range(n):
        lo, hi = 0, q
        while lo < hi:  # the first node with m + sc xi > 0
            mid = (lo + hi) // 2
            if m[i] + a[mid] > 0.0:
                hi = mid
            else:
                lo = mid + 1
        s0, s1, s2, s3 = above[0, lo], above[1, lo], above[2, lo], above[3, lo]
        b0, b1 = below[0, lo], below[1, lo]
        c3, p3 = (1.0 - s0) ** 3, s0 ** 3
        out[i, 0] = m[i] * s0 + above[4, lo]
        out[i, 1], out[i, 2], out[i, 3], out[i, 4] = s0, s1, s2, s3
        out[i, 5], out[i, 6], out[i, 7] = s0, s1, s2
        out[i, 8] = c3 * s0 - p3 * b0
        out[i, 9] = c3 * s1 - p3 * b1
        out[i, 10] = (1.0 - s0) * c3 * s0 + s0 * p3 * b0
    return out
