"""Functions and their Gaussian coefficients: activations and targets (registry, expressions,
user callables), quadrature rules, GE and conditional (cGET) coefficients, Hermite expansions."""
