"""Monte Carlo of the K-group, r-spike spiked random-features model (neuron groups that share r
learned directions): the simulator, its campaign and report against the theory, a reference solver."""
