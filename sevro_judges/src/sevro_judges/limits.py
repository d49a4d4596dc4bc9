"""Bounds only sevro's judges apply (docs/limits.md lists them with the core's)."""

from __future__ import annotations

MAX_RUBRIC_REPLY_BYTES = 1024 * 1024
"""A comparator judge's reply the software-engineering rubric reads (beyond: refused)."""
