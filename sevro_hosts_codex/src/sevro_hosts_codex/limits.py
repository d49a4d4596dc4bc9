"""Bounds only the Codex host applies (docs/limits.md lists them with the core's)."""

from __future__ import annotations

MAX_CODEX_CONFIG_ROOT_FILE_BYTES = 256 * 1024
"""Bytes of ``<config root>/.codex/config.toml`` read for its one imported setting; a larger
file is refused before anything runs."""

MAX_CODEX_AGENT_THREADS = 2**53 - 1
"""Largest ``agents.max_concurrent_threads_per_session`` imported (Sevro's safe-integer bound;
Codex itself requires at least 1)."""

CODEX_PREFLIGHT_TIMEOUT_SECONDS = 60
"""Seconds the per-request sandbox preflight (one ``codex sandbox`` probe) may take before the
trial's execution fails naming it; covers observed native policy start-up."""

MAX_CODEX_PREFLIGHT_OUTPUT_BYTES = 64 * 1024
"""Bytes of the preflight probe's output kept for its failure reason."""
