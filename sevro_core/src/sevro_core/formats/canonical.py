"""RFC 8785 canonical JSON and the digests built on it.

Evaluation identity must not depend on key order, float spelling or whitespace, so every digest
sevro records is a sha256 over the JCS form (via the ``rfc8785`` library, which implements
ECMAScript number formatting and UTF-16 key ordering as the RFC requires).
"""

from __future__ import annotations

import hashlib

import rfc8785

from sevro_core.formats.jsonio import JsonValue


class CanonicalJsonError(ValueError):
    """The value cannot be represented as canonical JSON."""


def canonical_json(value: JsonValue) -> bytes:
    """Return the RFC 8785 canonical UTF-8 bytes of ``value``."""
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError as exc:
        raise CanonicalJsonError(str(exc)) from exc


def sha256_hex(data: bytes) -> str:
    """Hex sha256 of raw bytes."""
    return hashlib.sha256(data).hexdigest()


def hash_json(value: JsonValue) -> str:
    """Hex sha256 of the canonical JSON of ``value`` (Sevro's ``hashJson``)."""
    return sha256_hex(canonical_json(value))
