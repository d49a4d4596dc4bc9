"""Judges: running a judge host for a role, and calibrating a judge against gold labels."""
