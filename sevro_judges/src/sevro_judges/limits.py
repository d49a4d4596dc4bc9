"""Bounds of sevro's judges (each has a row in docs/limits.md)."""

from __future__ import annotations

MAX_REVIEW_FINDINGS = 64
MAX_REVIEW_TITLE_CHARS = 200
MAX_REVIEW_TEXT_CHARS = 4096
MAX_REVIEW_QUESTIONS = 32
