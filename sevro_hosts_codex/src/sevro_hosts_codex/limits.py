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

MAX_CODEX_SESSION_BYTES = 8 * 1024 * 1024
"""Bytes of one native session (rollout) file read from the trial's private ``CODEX_HOME``; a
larger one leaves ``sevro.codex.native-calls`` (or that child's entry) partial."""

MAX_CODEX_SESSION_ENTRIES = 10_000
"""JSONL entries parsed from one native session file; more leave its observation partial."""

MAX_CODEX_SESSION_FILES = 1024
"""Entries walked under ``CODEX_HOME/sessions`` to find one thread's rollout; more is partial."""

MAX_CODEX_NATIVE_CALLS = 128
"""Allowlisted native calls (and direct tool calls) kept from one session; more is truncated."""

MAX_CODEX_CHILD_ROLLOUTS = 8
"""Child thread rollouts (accepted sub-agent spawns) checked per trial; more sets
``childrenTruncated`` and leaves the observation partial."""

MAX_CODEX_PLUGINS = 16
"""Plugins one Codex host configuration's ``marketplace`` may name."""

MAX_CODEX_PLUGIN_MANIFEST_BYTES = 64 * 1024
"""Bytes of a local marketplace's ``.agents/plugins/marketplace.json``."""

MAX_CODEX_MARKETPLACE_FILES = 4096
"""Entries (files and directories) of a local marketplace's named plugins, and of one installed
plugin read back to verify its install receipt."""

MAX_CODEX_MARKETPLACE_BYTES = 16 * 1024 * 1024
"""Bytes of a local marketplace's named plugins, copied into each trial's private state."""

CODEX_PLUGIN_INSTALL_TIMEOUT_SECONDS = 60
"""Seconds one ``codex plugin marketplace add`` or ``codex plugin add`` may take."""

MAX_CODEX_SKILL_FILE_BYTES = 1024 * 1024
"""Bytes of a ``SKILL.md`` checked for an explicit ``$skill`` or ``$plugin:skill`` receipt."""

MAX_CODEX_APP_SERVER_LINE_BYTES = 1024 * 1024
"""Bytes of one JSON-RPC message line from ``codex app-server``; a longer line fails the trial."""

MAX_CODEX_APP_SERVER_STREAM_BYTES = 8 * 1024 * 1024
"""Bytes ``codex app-server`` may send for one prompt (its native turns included); more fails
the trial (process group killed)."""

MAX_CODEX_APP_SERVER_STDERR_BYTES = 64 * 1024
"""Bytes of the app-server's stderr kept for failure reasons."""

CODEX_APP_SERVER_START_TIMEOUT_SECONDS = 60
"""Seconds ``initialize`` and ``thread/start`` may take together before the trial fails."""

MAX_CODEX_NATIVE_TURNS = 64
"""Native turns (the prompt's own and its goal continuations) one prompt may run on
``app-server``; more fails the trial rather than waiting on an unbounded chain."""

MAX_CODEX_GOAL_UPDATES = 64
"""Goal status updates kept in ``sevro.host.native-goal``; more sets ``truncated``."""

MAX_CODEX_PLUGIN_HOOK_HANDLERS = 64
"""Command hook handlers one marketplace plugin may declare (beyond: refused before the run)."""

CODEX_PLUGIN_HOOK_TIMEOUT_SECONDS = 60
"""Seconds a plugin hook handler may run when it declares no ``timeout``; then its sandbox's
processes are killed."""

MAX_CODEX_PLUGIN_HOOK_TIMEOUT_SECONDS = 600
"""The largest ``timeout`` a plugin hook handler may declare (beyond: refused before the run)."""

MAX_CODEX_PLUGIN_HOOK_RECORDS = 4096
"""Plugin hook executions one trial records (beyond: ``sevro.host.hooks`` is partial)."""
