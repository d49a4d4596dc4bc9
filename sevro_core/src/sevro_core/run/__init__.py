"""A run from cases to results: loading, planning, identity, trial engine, scheduling, resume."""
