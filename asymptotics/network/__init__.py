"""The network theory beyond one step (docs/THEORY.md §15): the neuron groups of a
finite-support readout and of several giant steps with each group's bulk covariance on the span
of the target and of the spikes, solved by the K-group equations with the channels it induces."""
