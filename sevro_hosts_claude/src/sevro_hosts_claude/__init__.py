"""Arrives with its own issue; registers nothing yet."""
