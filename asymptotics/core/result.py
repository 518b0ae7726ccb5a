"""The one result record of the theory: :class:`RiskResult`, returned by every entry point
(``risk`` on every route, the rows of ``risk_curve`` and ``risk_grid``, the named doors
``risk_spiked``, ``risk_readout``, ``risk_steps``, ...) with the same fields and the same
``to_frame()`` columns (:data:`RESULT_COLUMNS`) whichever equations produced it: the one-spike
equations (docs/THEORY.md §5) or the K-group ones (§10-§12, §15).

A field that does not apply to the route is None (or NaN for a number): the one-spike order
parameters ``q1 ... psihat`` and the spike ``r, c, gamma`` are NaN on a K-group route, whose
order parameters (matrices by group) are the mapping ``order`` and whose model is
``loadings, bulk, fractions, overlaps``; those are None on the one-spike route.
``SpikedResult`` (the K-group record's former name) is the same class.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import TYPE_CHECKING

from asymptotics.core.meta import FieldGroups

if TYPE_CHECKING:
    import pandas as pd

#: the one-spike order parameters and their conjugates (docs/THEORY.md §5)
STATE_NAMES = ("q1", "q2", "V1", "V2", "zeta", "psi", "m")
HAT_NAMES = ("Vhat1", "Vhat2", "qhat1", "qhat2", "zetahat", "psihat")
#: the K-group model and order parameters (None on the one-spike route), and the quadrature
#: rule of a K-group point (``n_kappa`` 0 and ``quadrature_change`` NaN where not refined)
GROUP_FIELDS = ("loadings", "bulk", "fractions", "overlaps", "order", "n_kappa",
                "quadrature_change")
#: fields that are lists or mappings: JSON strings in ``to_dict`` and the frames
JSON_FIELDS = ("eta_schedule", "loadings", "bulk", "fractions", "overlaps", "order")
#: what produced a point beyond the one step's scalars (docs/THEORY.md §11, §12, §14): the number
#: of giant steps, eta_tilde of every step, the initial readout and the batch policy; the
#: one-spike route's values are 1, [eta], "constant", "fresh"; None where the point has no step
#: (a given K-group model)
STEP_FIELDS = ("steps", "eta_schedule", "readout", "batch")
#: the columns of a result, in order: the one schema of ``to_frame``, ``risk_curve`` and
#: ``risk_grid`` on every route (grouped as parameters, solution and diagnostics)
RESULT_COLUMNS = ["alpha", "risk", "converged", "iterations", "residual", "sigma", "target",
                  "alpha0", "eta", *STEP_FIELDS, "lam", "beta", "delta", "model", "measure", "r",
                  "c", "gamma", "status", "message", *STATE_NAMES, *HAT_NAMES, "p", "common_row",
                  *GROUP_FIELDS]

NAN = math.nan


@dataclass(frozen=True, kw_only=True)
class RiskResult(FieldGroups):
    """One point of the theory with every parameter that produced it (THEORY.md §1
    conventions): ``risk`` is the test error E_x (g - f)^2 on noiseless inputs, NaN unless
    ``converged`` (then ``status`` and ``message`` say why). Fields that do not apply to the
    route are None or NaN (module docstring)."""

    alpha: float
    sigma: str
    target: str
    alpha0: float = NAN  # the first batch n0/d (NaN: a given K-group model has no step)
    eta: float = NAN  # eta_tilde of the step (NaN: several steps of different rates, none)
    #: the giant steps (THEORY.md §12), eta_tilde of each (a list), the readout ("constant",
    #: "pm1" or the text of its mapping value -> weight, §11) and the batches ("fresh" or
    #: "reused", §14); None: not a point after steps (a given K-group model)
    steps: int | None = None
    eta_schedule: list | None = None
    readout: str | None = None
    batch: str | None = None
    lam: float
    beta: float
    delta: float
    #: "srf", "network" or "rf": the model the point describes
    model: str = "srf"
    measure: str | None = None  # the spectral measure's kind (one-spike route)
    r: float = NAN
    c: float = NAN
    gamma: float = NAN
    risk: float
    converged: bool
    status: str
    message: str
    iterations: int
    residual: float
    q1: float = NAN
    q2: float = NAN
    V1: float = NAN
    V2: float = NAN
    zeta: float = NAN
    psi: float = NAN
    m: float = NAN
    Vhat1: float = NAN
    Vhat2: float = NAN
    qhat1: float = NAN
    qhat2: float = NAN
    zetahat: float = NAN
    psihat: float = NAN
    #: the solver's raw state (the unknowns in the equations' order)
    state: tuple = field(default=(), repr=False, compare=False)
    p: float = math.inf  # width of the finite-p theory (docs/DERIVATIONS.md §8); inf: the limit
    # omega of the mean row at finite p (docs/DERIVATIONS.md §8, "The network's initial
    # output"); NaN on a K-group route
    common_row: float = NAN
    loadings: list | None = None
    bulk: list | None = None
    fractions: list | None = None
    overlaps: list | None = None
    #: the K-group order parameters Q1, Q2, V1, V2, zeta, psi, m (lists by group)
    order: dict | None = field(default=None, repr=False, compare=False)
    # the kappa rule a K-group risk was computed on (nodes per dimension; 0: the problem's own)
    # and the estimated relative quadrature error (``spiked.solve.quadrature_error``; on a curve
    # the largest of its probes'; NaN: not checked)
    n_kappa: int = 0
    quadrature_change: float = NAN

    #: the three groups of fields: what produced the point, what the equations give, how the
    #: solve went (``RESULT_COLUMNS`` is their one column order)
    PARAMETERS = ("alpha", "sigma", "target", "alpha0", "eta", *STEP_FIELDS, "lam", "beta",
                  "delta", "model", "measure", "p", "common_row", "loadings", "bulk", "fractions",
                  "overlaps")
    SOLUTION = ("risk", "r", "c", "gamma", *STATE_NAMES, *HAT_NAMES, "order")
    DIAGNOSTICS = ("converged", "status", "message", "iterations", "residual", "n_kappa",
                   "quadrature_change")

    def to_dict(self) -> dict:
        """Every field but the raw solver state, in the order of :data:`RESULT_COLUMNS`;
        lists and mappings as JSON strings."""
        out = {}
        for k in RESULT_COLUMNS:
            v = getattr(self, k)
            out[k] = json.dumps(v) if v is not None and k in JSON_FIELDS else v
        return out

    as_dict = to_dict

    def with_fields(self, **changes: object) -> RiskResult:
        """``dataclasses.replace(self, **changes)``: the same record with ``changes`` (every
        other field, compared or not, the same object), without re-running ``__init__`` over
        every field (the K-group ladder re-labels a result per rule)."""
        unknown = [k for k in changes if k not in _FIELD_NAMES]
        if unknown:
            raise TypeError(f"RiskResult has no field {unknown[0]!r}")
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.__dict__.update(changes)
        return new

    def to_frame(self) -> pd.DataFrame:
        """A one-row DataFrame with the columns of ``risk_curve`` (:data:`RESULT_COLUMNS`)."""
        import pandas as pd

        return pd.DataFrame([self.to_dict()], columns=RESULT_COLUMNS)


#: the fields of a result (:meth:`RiskResult.with_fields` checks the names it sets)
_FIELD_NAMES = frozenset(f.name for f in fields(RiskResult))

#: the former name of the K-group record, kept so that old code runs (deprecated: use
#: :class:`RiskResult`, the same class)
SpikedResult = RiskResult


def step_fields(steps: int | None, eta_schedule: object, readout: str | None,
                batch: str | None, json_text: bool = False) -> dict:
    """The :data:`STEP_FIELDS` of a point: ``eta_schedule`` eta_tilde of every step (a number,
    repeated for each step, or one per step), ``readout`` its name (``Readout.name`` of
    ``asymptotics.spiked.readouts``); the schedule as JSON text if ``json_text`` (a frame's
    cell)."""
    if steps is None:
        return dict.fromkeys(STEP_FIELDS)
    if isinstance(eta_schedule, int | float):
        schedule = [float(eta_schedule)] * steps
    else:
        schedule = [float(v) for v in eta_schedule]  # type: ignore[union-attr]
    return {"steps": int(steps), "eta_schedule": json.dumps(schedule) if json_text else schedule,
            "readout": readout, "batch": batch}


def after_steps_fields(alpha0: float, schedule: tuple, readout: str, batch: str,
                       json_text: bool = False) -> dict:
    """A point after ``len(schedule)`` steps: the step's ``alpha0``, ``eta`` the rate of every
    step when they are equal (NaN for a schedule of different rates) and :func:`step_fields`."""
    rates = [float(v) for v in schedule]
    return {"alpha0": float(alpha0), "eta": rates[0] if len(set(rates)) == 1 else NAN,
            **step_fields(len(rates), rates, readout, batch, json_text)}


def one_step_fields(eta: float, json_text: bool = False) -> dict:
    """The :data:`STEP_FIELDS` of a one-spike point: one step of ``eta``, the constant readout
    on a fresh batch (docs/THEORY.md §1)."""
    return step_fields(1, eta, "constant", "fresh", json_text)


def results_frame(results: list, route: str | None = None, fields: dict | None = None
                  ) -> pd.DataFrame:
    """The records ``results`` of one model (the same model in every row: its JSON columns
    encoded once, from the first) as the DataFrame of ``[res.to_dict() ...]``; ``route``: a
    column of that text after ``alpha``; ``fields``: columns of one value (a list of Nones for
    None), the frame of ``df.insert(1, "route", route)`` then ``df[name] = value``, built at
    once (a name not a column of the record appended, as ``df[name]`` would)."""
    import numpy as np
    import pandas as pd

    fields = fields or {}
    names = [*RESULT_COLUMNS[:1], *(["route"] if route is not None else []), *RESULT_COLUMNS[1:]]
    names += [k for k in fields if k not in names]
    if not results:
        df = pd.DataFrame([], columns=RESULT_COLUMNS)
        if route is not None:
            df.insert(1, "route", route)
        for name, value in fields.items():
            df[name] = [value] * len(df) if value is None else value
        return df
    first = results[0].to_dict()
    rows = list(map(_ROW, results))  # (every column of a result at once: one C call)
    cols = dict(zip(RESULT_COLUMNS, map(list, zip(*rows, strict=True)), strict=True))
    for k in JSON_FIELDS:
        cols[k] = orders_json(cols[k]) if k == "order" else [first[k]] * len(results)
    for k, value in fields.items():  # (each one value in every row: what df[k] = value holds)
        cols[k] = [value] * len(results)
    if route is not None:
        cols["route"] = [route] * len(results)
    for k, v in cols.items():  # (a column of Python floats: pandas' float64 column, built once)
        if all(type(x) is float for x in v):
            cols[k] = np.array(v, dtype=np.float64)
    return pd.DataFrame(cols, columns=names)


def orders_json(orders: list) -> list:
    """``[None if v is None else json.dumps(v) for v in orders]`` for the K-group ``order``
    mappings (``spiked.solve.unpack_state``), the same strings faster: a mapping of string keys
    to lists (or lists of lists) of finite Python floats is written by one %-template per shape
    (json writes a finite float by ``repr``, as ``%r`` does); any other value (a non-finite
    number, an int, a bool, None, a string, deeper nesting) by ``json.dumps`` itself."""
    templates: dict = {}
    out = []
    for v in orders:
        if v is None:
            out.append(None)
            continue
        shape, flat = _shape_and_values(v)
        if shape is None or not all(type(x) is float for x in flat) or \
                not math.isfinite(sum(flat)):
            out.append(json.dumps(v))
            continue
        t = templates.get(shape)
        if t is None:
            t = templates[shape] = _template(shape)
        out.append(t % tuple(flat))
    return out


def _shape_and_values(order: object) -> tuple[tuple | None, list]:
    """(the keys and list lengths of ``order``, its numbers in order), or (None, []) where it is
    not a dict of string keys to lists or lists of lists (then json writes it)."""
    if type(order) is not dict:
        return None, []
    shape, flat = [], []
    for k, v in order.items():
        if type(k) is not str or type(v) is not list:
            return None, []
        if v and type(v[0]) is list:
            lens = []
            for row in v:
                if type(row) is not list:
                    return None, []
                lens.append(len(row))
                flat += row
            shape.append((k, tuple(lens)))
        else:
            shape.append((k, len(v)))
            flat += v
    return tuple(shape), flat


def _template(shape: tuple) -> str:
    """The %-template of ``json.dumps`` of a mapping of ``shape`` (:func:`_shape_and_values`)
    whose numbers are finite floats (default separators ``", "`` and ``": "``)."""
    def vec(n: int) -> str:
        return "[" + ", ".join(["%r"] * n) + "]"

    parts = []
    for k, n in shape:
        value = "[" + ", ".join(vec(m) for m in n) + "]" if isinstance(n, tuple) else vec(n)
        parts.append(json.dumps(k).replace("%", "%%") + ": " + value)
    return "{" + ", ".join(parts) + "}"


#: a result's fields in the order of ``RESULT_COLUMNS`` (:func:`results_frame`)
_ROW = attrgetter(*RESULT_COLUMNS)
