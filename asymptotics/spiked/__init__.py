"""K neuron groups and r learned directions (spikes): the sharp test error of ridge on
``sigma(sqrt(c_g) G_i . x + u_g . V^T x)``, its solver and the per-direction contributions.

Conventions (docs/THEORY.md §10; the same as the one-spike sRF model of §3):

- inputs ``x ~ N(0, I_d)``; ``V`` is a ``d x r`` orthonormal basis of the learned directions;
- row ``i`` of group ``g`` (a fraction ``fractions[g]`` of the ``p = beta d`` neurons) is
  ``w_i = sqrt(bulk[g]) G_i + V loadings[g]`` with ``G_i`` uniform on the unit sphere (norm 1,
  not ``1/sqrt d`` per entry), so ``G_i . x ~ N(0, 1)`` and ``loadings`` is in units of that;
- target ``y = g(theta_1 . x, ..., theta_k . x) + sqrt(delta) xi`` with
  ``theta_j = V overlaps[:, j] + rho_j t_j``, ``t_j`` orthonormal and orthogonal to V,
  ``rho_j = sqrt(1 - |overlaps[:, j]|^2)``;
- readout ``f(x) = a . sigma(W x) / sqrt(p)`` fitted by the sum loss
  ``sum_{i<=n} (y_i - f(x_i))^2 + lam |a|^2`` on ``n = alpha d`` samples; risk ``E (g - f)^2``.

K = r = 1 with ``loadings = [[r]]``, ``bulk = [c]``, ``overlaps = [[gamma]]`` is the one-spike
sRF theory, ``asymptotics.risk(model="srf")`` with the spike (r, c, gamma).
"""

from asymptotics.core.kernel_cache import guard as _guard_kernel_cache
from asymptotics.spiked.problem import SpikedProblem, build_spiked_problem
from asymptotics.spiked.readouts import (
    Readout,
    ReadoutMapping,
    parse_readout,
    readout_mapping,
    risk_readout,
    risk_readout_curve,
)
from asymptotics.spiked.semi_empirical import risk_spiked_semi_empirical
from asymptotics.spiked.solve import (
    SpikedResult,
    risk_spiked,
    risk_spiked_curve,
    risk_spiked_grid,
    solve_spiked,
    spike_contributions,
)

# anderson and contrast inline kernels of kernels.py (and anderson the one Anderson iteration
# of equations.mixing): cached kernels never outlive an edit of a kernel they inline
_guard_kernel_cache(["asymptotics.spiked.kernels", "asymptotics.spiked.anderson",
                     "asymptotics.spiked.contrast", "asymptotics.equations.small_dense",
                     "asymptotics.equations.mixing"])

__all__ = ["SpikedProblem", "SpikedResult", "build_spiked_problem", "risk_spiked",
           "risk_spiked_curve", "risk_spiked_grid", "risk_spiked_semi_empirical", "solve_spiked",
           "spike_contributions", "Readout", "ReadoutMapping", "parse_readout", "readout_mapping",
           "risk_readout", "risk_readout_curve"]
