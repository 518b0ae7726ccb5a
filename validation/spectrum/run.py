"""One call: simulate, analyse, predict (:class:`SpectrumRun`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from asymptotics.multiindex.spikes import (
    hermite_coefficients,
    one_step_spike_count,
    two_step_outlier_count,
    two_step_outlier_count_for,
)

from .analysis import (
    FeatureSpectrum,
    WeightSpectrum,
    feature_spectrum,
    polynomial_amplitudes,
    weight_spectrum,
)
from .model import MAX_FEATURE_ORDER, Simulation, StepConfig, rng_for, simulate


@dataclass(frozen=True, eq=False)
class SpectrumRun:
    """Measured vs predicted counts for one configuration.

    Two steps: ``measured`` = outliers of W2 beyond the leading one, ``predicted`` =
    ``floor(a2 / (1/2 - a1))`` (generic activation), ``predicted_activation`` the count with the
    activation's vanishing Hermite coefficients removed. One step: the spikes of the features
    ``sigma(X W1^T)`` on fresh inputs vs ``#{l: a > (l-1)/(2l), E sigma^(l) != 0}`` (orders up to
    20), and ``weights`` is the spectrum of W1 (one leading outlier expected for a > 0)."""

    config: StepConfig
    measured: int
    predicted: int | None
    predicted_activation: int | None
    weights: WeightSpectrum
    features: FeatureSpectrum | None
    amplitudes: np.ndarray
    amplitude_floors: np.ndarray
    seconds: float

    def record(self) -> dict:
        """A flat dict (one CSV row)."""
        c = self.config
        w = self.weights
        row = dict(
            d=c.d, p=c.p, n=c.n, beta=c.beta, alpha0=c.alpha0, steps=c.steps, a1=c.a1,
            a2=c.a2 if c.a2 is not None else math.nan, eta1=c.eta1, eta2=c.eta2,
            sigma=c.sigma, target=c.target, batch=c.batch, readout=c.readout, delta=c.delta,
            seed=c.seed, measured=self.measured,
            predicted=self.predicted if self.predicted is not None else -1,
            predicted_activation=(self.predicted_activation
                                  if self.predicted_activation is not None else -1),
            weight_outliers=w.n_outliers, edge=w.edge.edge, threshold=w.edge.threshold,
            top_sv=float(w.singular_values[0]),
            second_sv=float(w.singular_values[1]), seconds=self.seconds,
        )
        for m, (v, f) in enumerate(zip(self.amplitudes, self.amplitude_floors, strict=True),
                                   start=1):
            row[f"amp{m}"] = float(v)
            row[f"floor{m}"] = float(f)
        for i in range(min(w.n_outliers, 6)):
            row[f"sv{i + 1}"] = float(w.outliers[i])
            for j in range(w.right_overlaps.shape[1]):
                row[f"ov{i + 1}_theta{j + 1}"] = float(w.right_overlaps[i, j])
            if w.left_degree.size:
                row[f"deg{i + 1}"] = int(w.left_degree[i])
        return row


def run_spectrum(
    config: StepConfig,
    *,
    method: str = "fit",
    kappa: float = 2.0,
    features: bool | None = None,
    max_degree: int = 5,
    simulation: Simulation | None = None,
) -> SpectrumRun:
    """Simulate ``config`` and compare the outlier count with ``asymptotics.multiindex.spikes``.
    ``features`` (default: True for one step) adds the feature-matrix analysis on
    ``n`` fresh inputs (stream 'test')."""
    import time

    t0 = time.perf_counter()
    sim = simulation if simulation is not None else simulate(config)
    two = config.steps == 2
    W = sim.W2 if two else sim.W1
    ws = weight_spectrum(W, directions=sim.theta, readout=sim.a, max_degree=max_degree,
                         method=method, kappa=kappa)
    amps, floors = polynomial_amplitudes(W - (sim.W1 if two else sim.W0), sim.a, max_degree)
    fs = None
    if features if features is not None else not two:
        X = rng_for(config.seed, "test").standard_normal((config.n, config.d))
        fs = feature_spectrum(sim.W1, X, config.sigma, directions=sim.theta,
                              max_degree=max_degree, method=method, kappa=kappa)
    if two:
        measured = max(ws.n_outliers - 1, 0)
        if config.a1 < 0.5 and config.a2 < 0.5:
            predicted = two_step_outlier_count(config.a1, config.a2)
            coeffs = hermite_coefficients(config.sigma, predicted + 2)
            predicted_act = two_step_outlier_count_for(config.a1, config.a2, coeffs)
        else:
            predicted = predicted_act = None
    else:
        assert fs is not None
        measured = fs.n_outliers
        if config.a1 < 0.5:
            coeffs = hermite_coefficients(config.sigma, MAX_FEATURE_ORDER)
            predicted = predicted_act = one_step_spike_count(config.a1, coeffs)
        else:
            predicted = predicted_act = None
    return SpectrumRun(config, measured, predicted, predicted_act, ws, fs, amps, floors,
                       time.perf_counter() - t0)


