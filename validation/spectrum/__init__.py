"""Spectra of the learned first-layer weights after one and two full-batch gradient steps.

Convention (Moniri, Lee, Hassani & Dobriban 2023, arXiv:2310.07891; Moniri & Hassani 2026,
arXiv:2605.17767), written in
THEORY.md §1 units so that one code path covers both:

* inputs ``x ~ N(0, I_d)``, labels ``y = g(<theta_1, x>, ..., <theta_k, x>) + sqrt(delta) xi``,
  orthonormal ``theta_j`` (random, drawn from their own seed stream);
* network ``f(x) = (1/sqrt p) sum_j a_j sigma(<w_j, x>)``; rows of ``W0`` uniform on the unit
  sphere; the readout ``a`` is drawn once and never trained: ``a_j = g_j / sqrt p`` with
  ``g_j ~ N(0, 1)`` (``readout='gaussian'``, the papers'), ``g_j ~ Uniform[-sqrt 3, sqrt 3]``
  (``'uniform'``: bounded, so no row of the update is exceptionally heavy at finite p) or
  ``g_j = 1`` (``'constant'``, THEORY.md §1; every spike then shares the left vector 1_p);
* step ``t``: ``W_t = W_{t-1} - eta_t grad_W L_t``, ``L_t = (1/(2 n)) sum_i (y_i - f(x_i))^2`` on
  ``n = alpha0 d`` samples (``batch='fresh'``: a new batch for the second step; ``'reused'``: the
  first batch again), i.e. row by row
  ``w_j <- w_j + (eta_t a_j / (n sqrt p)) sum_i (y_i - f(x_i)) sigma'(<w_j, x_i>) x_i``;
* learning rates ``eta_t = eta_tilde_t p^(1/2 + a_t)``. The rank-one part of the gradient,
  ``(E sigma') a u^T / sqrt p`` with ``u = (1/n) sum_i y_i x_i``, has operator norm of order
  ``p^(-1/2)``, so the step adds a spike of order ``p^a_t`` to a bulk of order one: ``a = 0`` is the
  constant-step regime of those papers (an order-one spike, BBP-dependent) and ``a = 1/2`` with a
  constant readout is exactly THEORY.md §1 (``eta = eta_tilde p``). The convention is checked by
  the one-step count: the features ``sigma(X W1^T)`` on fresh inputs carry a spike of order ``l``
  iff ``a > (l-1)/(2l)`` and ``E sigma^(l) != 0`` (``asymptotics.multiindex.spikes``); see
  ``validation/reports/SPECTRA.md``.

Finite size (measured, ``validation/reports/SPECTRA.md``): the first step moves each
pre-activation by ``eps_j kappa ~ eta_tilde_1 E sigma' |u| p^(a1 - 1/2) g_j``, and the second step
adds a bulk perturbation of relative size ``~ eta_tilde_2 p^(a2 - 1/2)``; both vanish as p grows but
are of order one at p ~ 1000 when ``a`` is close to 1/2. Taylor terms match the simulated
amplitudes only while ``eps_j kappa`` is small (``eta_tilde_1 <~ 1``), and a large ``eta_tilde_2``
inflates the bulk. Hence the defaults ``eta_tilde = (1, 3)`` and the Gaussian readout (its powers
``a^(k+1)`` are less collinear than a uniform readout's, so the higher terms stand out more).

Spectral analysis (:func:`weight_spectrum`, :func:`feature_spectrum`): singular values, a bulk
edge, the outliers above ``threshold = edge + margin`` and their singular vectors' alignments:
right vectors with the target directions ``theta_j``; left vectors with the orthonormalised
polynomials of the readout (degree m, close to ``He_m(sqrt p a)`` for a Gaussian readout: the
second step's term of Taylor order ``k`` has left vector ``a^(k+1)``); for features, left vectors
with the Hermite features ``He_l(X theta_j)``. Two bulk-edge estimates:

* ``'fit'`` (default; Onatski-type): the top of a bulk with a square-root edge obeys
  ``s_(r+j) ~ E - c j^(2/3)``; starting from ``r = r_max`` the fit on ``J`` bulk values gives
  ``E`` and the local spacing ``c`` (of order ``m^(-2/3)``, ``m = min(p, d)``), the threshold is
  ``E + kappa c``, ``r`` is recounted and the fit repeated until ``r`` is stable. It follows
  deformed bulks (the finite-p noise of the steps) that the Marchenko-Pastur law does not.
* ``'mp'`` (Gavish-Donoho): the scale matching the median singular value to the Marchenko-Pastur
  median, edge ``scale (1 + sqrt beta)``, threshold ``edge (1 + kappa m^(-2/3))``. Exact for
  ``W0``; biased once the steps have deformed the bulk.

Seeds: ``numpy.random.SeedSequence(seed, spawn_key=(stream,))`` with separate streams for ``W0``
(0), the readout (1), the teacher directions (2), the first batch (3), the second batch (4) and
test inputs (5). Everything is float64; results are frozen dataclasses.

Modules: :mod:`.model` (configuration, seed streams, the steps), :mod:`.analysis` (bulk edge,
spectra, alignments, amplitudes), :mod:`.run` (:func:`run_spectrum`), :mod:`.plot` and :mod:`.cli`
(the ``spectrum`` subcommand).
"""

# ruff: noqa: F401  (the package re-exports its modules' names)
from asymptotics.coefficients.functions import get_function
from asymptotics.measures.marchenko_pastur import mp_density, mp_median, mp_singular_density
from asymptotics.multiindex.spikes import target_function

from ..protocol.montecarlo import sphere_rows, teacher_directions
from .analysis import (
    BulkEdge,
    FeatureSpectrum,
    WeightSpectrum,
    bulk_edge,
    feature_spectrum,
    polynomial_amplitudes,
    readout_polynomials,
    singular_values,
    top_singular_vectors,
    weight_spectrum,
)
from .cli import (
    CLI_HELP,
    add_subparser,
    main,
    run_cli,
)
from .model import (
    BATCHES,
    EDGE_METHODS,
    MAX_FEATURE_ORDER,
    READOUTS,
    STREAMS,
    Simulation,
    StepConfig,
    draw_batch,
    draw_readout,
    gd_step,
    rng_for,
    simulate,
)
from .plot import (
    plot_spectrum,
)
from .run import (
    SpectrumRun,
    run_spectrum,
)
