"""Judges: hosts run in an empty, sandboxed, passive workspace to judge what a candidate did."""
