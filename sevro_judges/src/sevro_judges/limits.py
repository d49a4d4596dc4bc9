"""Bounds of sevro's judges (each has a row in docs/limits.md)."""

from __future__ import annotations

MAX_REVIEW_FINDINGS = 64
MAX_REVIEW_TITLE_CHARS = 200
MAX_REVIEW_TEXT_CHARS = 4096
MAX_REVIEW_QUESTIONS = 32
MAX_SEMANTIC_REFERENCE_BYTES = 65536
"""The evaluator's reference file a ``sevro.semantic`` check puts before the judge."""
