"""The coupled network route's sampled device against a trained network (docs/DERIVATIONS.md
§9.9): the population covariance of the rows' bulk that the steps' map gives at the network's
own batches, its coupling read off as on a device block, and the theories fed with it."""
