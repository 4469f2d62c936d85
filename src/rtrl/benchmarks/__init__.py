"""Benchmarks: scripts that print medians and ratios measured in one run (never timed unit tests)."""
