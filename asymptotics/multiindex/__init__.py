"""Multi-index targets beyond one step (THEORY.md §8): the staircase prediction and the spike
and learnable-direction counts after one and two large steps; the risk of polynomial spikes
(THEORY.md §13)."""
