"""giantstep.asymptotics: sharp asymptotics of two-layer networks after one giant step."""

# isort: off
from asymptotics.core import numba_cache  # noqa: F401  (first: kernels are cached outside the package)
# isort: on
from asymptotics.api.by_step import risk_by_step
from asymptotics.api.grid import risk_grid
from asymptotics.api.risk import (
    ConvergenceError,
    RiskResult,
    build_problem,
    risk,
    risk_curve,
    solve_point,
)
from asymptotics.coefficients.callables import QuadratureWarning
from asymptotics.coefficients.cget import conditional_coefficients, ge_coefficients
from asymptotics.coefficients.functions import Function, available, get_function
from asymptotics.core.kernel_cache import guard as _guard_kernel_cache
from asymptotics.equations.solver import SolverConfig
from asymptotics.measures.spectral import (
    SpectralMeasure,
    empirical_measure,
    from_weights,
    marchenko_pastur,
)
from asymptotics.multiindex.polynomial_spikes import PolynomialSpikeResult, polynomial_spike_risk
from asymptotics.multiindex.steps import steps_mapping
from asymptotics.multiindex.steps_risk import risk_steps, state_from_weights
from asymptotics.spectra import SpectralLaw, spectrum
from asymptotics.spiked import (
    SpikedResult,
    readout_mapping,
    risk_readout,
    risk_readout_curve,
    risk_spiked,
    risk_spiked_curve,
    risk_spiked_grid,
    risk_spiked_semi_empirical,
    spike_contributions,
)
from asymptotics.step.srf import SpikeMapping, common_row_ratio, srf_mapping

_guard_kernel_cache()  # cached kernels never outlive an edit of a kernel they inline

__all__ = [
    "ConvergenceError", "Function", "QuadratureWarning", "RiskResult", "SolverConfig",
    "SpectralMeasure", "SpikeMapping",
    "available", "build_problem", "common_row_ratio", "conditional_coefficients",
    "empirical_measure", "from_weights", "ge_coefficients", "get_function", "marchenko_pastur",
    "risk", "risk_curve", "risk_grid", "solve_point", "srf_mapping", "__version__",
    "SpikedResult", "risk_spiked", "risk_spiked_curve", "risk_spiked_grid",
    "risk_spiked_semi_empirical", "spike_contributions", "readout_mapping", "risk_readout",
    "risk_readout_curve", "risk_by_step", "risk_steps", "state_from_weights", "steps_mapping",
    "PolynomialSpikeResult", "polynomial_spike_risk", "SpectralLaw", "spectrum",
]

def _version() -> str:
    from asymptotics.core.meta import version

    return version()


__version__ = _version()
