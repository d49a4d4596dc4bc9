"""Experiments: arms of skills and instructions compared on paired trials, and the statistics
that say whether a difference between arms is real or noise (`statistics`)."""
