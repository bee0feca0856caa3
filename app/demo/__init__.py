"""``telltale demo``: the service, a scripted workload with every failure mode, and a summary."""
