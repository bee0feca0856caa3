"""A monitor's windows: which rows a run reads, sampled, cached and shared across a cycle."""
