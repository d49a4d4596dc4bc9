"""Experiments: skills under test, the sources they come from, and the statistics that say
whether a difference between arms compared on paired trials is real or noise; experiment files
that declare the arms, cases and comparisons."""
