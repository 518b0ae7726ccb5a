"""Parameter sweeps at scale: theory curves and Monte Carlo over grids, resumable and exact.

``sweep(kind, grid, store=..., **fixed)`` runs every combination of the ``grid`` values (any
parameter of the theory or of the simulations) with the ``fixed`` ones, and returns a DataFrame.

Units of work (tasks):

- ``theory``: one curve along alpha of the sRF equations (``asymptotics.risk_curve(...,
  model="srf")``: warm starts and continuation along the grid's alphas), one task per combination
  of the other parameters; ``theory-network``: the same for the network theory
  (``model="network"``);
- ``network`` / ``srf`` / ``rf``: one Monte Carlo repetition
  (``validation.protocol.simulator.simulate_grid_once``: one first layer, nested ridge batches
  along alpha,
  every lam), one task per combination of the other parameters and repetition ``rep < seeds``.

Seeds come from the parameters, never from the order of work: repetition ``rep`` uses
``SeedSequence(entropy, spawn_key=(rep,))`` with ``entropy`` = 128 bits of the SHA-256 of the
simulation parameters (all but ``alpha`` and ``lam``, ``seed`` a salt; not the model, so
``network``, ``srf`` and ``rf`` at the same parameters share their random streams: paired).
Each task runs with one BLAS thread, so results are bit-identical whatever the scheduler and
worker count (on the same BLAS build).

Schedulers (:func:`validation.protocol.pool.run_tasks`, the package's one scheduler): ``local``
(default) is a pool of ``n_jobs`` spawned processes (default: all cores; ``n_jobs = 1`` runs in
this process); ``dask`` runs on ``dask.distributed``, a local cluster of ``n_jobs``
single-threaded worker processes or the existing cluster at ``address`` (optional extra
``giantstep[dask]``; remote workers need giantstep installed).

Store (``store=path``): a :class:`validation.campaign.Store` (SQLite, one table per kind, one
row per point, long format), each finished task's rows and its done mark written in one
transaction, so a kill at any instant leaves whole tasks only. Columns: ``key`` (hash of the
point's parameters), ``task`` (hash of the task, the campaign's key), ``task_rows`` (rows in
the task), ``kind``, every parameter, the result (``risk`` NaN unless ``converged``),
``seconds`` and ``cpu_seconds`` (the task's wall and CPU time) and ``version`` (giantstep's).
On restart the tasks already stored are skipped (a theory task's hash covers its whole alpha
list, since warm starts tie a curve's points together: a new alpha grid recomputes the curves;
simulation repetitions are keyed by their own parameters, so ``seeds`` can grow). ``csv=path``
exports the kind's stored rows sorted by the parameters (the committed form of a sweep, e.g. the
phase diagram's data) and seeds the store from that file when it exists.

Modules: :mod:`.params` (kinds, parameters, the store's schema, grid parsing), :mod:`.tasks`
(hashing, planning, running one task, the campaign), :mod:`.runner` (:func:`sweep`,
:func:`read_store`, :func:`summarize`), :mod:`.heatmap` and :mod:`.cli` (the ``sweep``
subcommand).
"""

from .cli import DEFAULT_ALPHAS, add_subparser, run_cli
from .heatmap import grid_axes, plot_heatmap
from .params import (
    DEFAULTS,
    KINDS,
    META,
    RULES,
    SCHEDULERS,
    SIM_PARAMS,
    SIM_RESULT,
    STRING_COLUMNS,
    TAIL,
    THEORY_PARAMS,
    check_value,
    columns,
    params_of,
    parse_grid_spec,
    parse_values,
)
from .runner import read_store, summarize, sweep
from .tasks import Task, campaign, package_version, plan, run_task, task_rows

__all__ = [
    "DEFAULTS", "DEFAULT_ALPHAS", "KINDS", "META", "RULES", "SCHEDULERS", "SIM_PARAMS",
    "SIM_RESULT", "STRING_COLUMNS", "TAIL", "THEORY_PARAMS", "Task", "add_subparser",
    "campaign", "check_value", "columns", "grid_axes", "package_version", "params_of",
    "parse_grid_spec", "parse_values", "plan", "plot_heatmap", "read_store", "run_cli",
    "run_task", "summarize", "sweep", "task_rows",
]
