"""Sizes of the simulations behind the figures: full quality and the ``--quick`` smoke mode."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Quality:
    d: int
    seeds: int
    n_test: int
    markers: tuple[float, ...]  # alphas with simulation markers
    points: int  # alphas on the theory lines


FULL = Quality(d=1000, seeds=6, n_test=10_000, markers=(0.5, 1.0, 2.0, 3.0, 4.0, 5.0), points=80)
QUICK = Quality(d=150, seeds=2, n_test=2000, markers=(1.0, 3.0), points=25)


def quality(quick: bool) -> Quality:
    return QUICK if quick else FULL


def best_linear_level(target: str) -> float:
    """Risk of the best linear predictor mu1* <theta*, x>: E g^2 - (E z g)^2 (THEORY.md §2)."""
    from asymptotics import ge_coefficients

    k = ge_coefficients("linear", target)
    return k.mu2_star - k.mu1_star**2
