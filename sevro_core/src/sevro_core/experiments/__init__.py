"""Experiments: skills under test, the sources they come from, arms compared on paired trials."""
