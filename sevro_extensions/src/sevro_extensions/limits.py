"""Bounds of the extension protocol (each has a row in docs/limits.md)."""

from __future__ import annotations

MAX_FIXTURE_SETUP_ARGS = 16
"""Arguments of a ``prepare`` ``fixtureSetup.command`` (``argv[0]`` included)."""
MAX_FIXTURE_SETUP_ARGV_BYTES = 65536
"""The setup command's argv as declared, UTF-8, one terminating NUL per argument."""
MAX_FIXTURE_SETUP_ENV_NAMES = 32
"""Variables a ``fixtureSetup.environment`` may set."""
MAX_FIXTURE_SETUP_ENV_BYTES = 16384
"""The setup environment as declared: ``NAME=value`` plus a NUL per variable, UTF-8."""
FIXTURE_SETUP_TIMEOUT_SECONDS = 120.0
"""How long one trial's fixture setup may run before its process group is killed."""
MAX_PREPARATION_SOURCE_FILE_BYTES = 67108864
"""One ``sourceRef`` artifact file read from the case source root."""
MAX_PREPARATION_BYTES = 268435456
"""All of one preparation's artifact contents together (they are held in memory for the run)."""
MAX_EXTENSION_STDOUT_BYTES = 8388608
"""One response on stdout; beyond it the process group is killed and the call is an error."""
MAX_EXTENSION_STDERR_BYTES = 65536
"""Stderr kept from one call, for diagnostics only; the rest is dropped."""
MAX_INSTRUMENTATION_REQUESTS = 64
"""Items in ``prepare``'s ``requestedInstrumentation`` (the response schema's ``maxItems``)."""
MAX_INSTRUMENTATION_CONFIGURATION_BYTES = 65536
"""One requested instrumentation's ``configuration``, as compact JSON; it is retained in
evidence with the request."""
EXTENSION_TIMEOUT_MS = 30000
"""Default time one method call may take before its process group is killed."""
MAX_EVALUATE_DETAIL_CHARS = 4096
"""A check's or domain outcome's ``detail`` in ``evaluate`` (the schema's bound; longer is cut)."""
MAX_EXTENSION_COMMAND_FILE_BYTES = 65536
"""The ``--extension-command-file`` JSON argv array."""
MAX_EXTENSION_COMMAND_ARGS = 256
"""Arguments in the extension's argv (``argv[0]`` included)."""
MAX_EXTENSION_SOURCE_FILES = 256
"""Files in the source closure (``argv[0]`` plus every ``--extension-source-file``)."""
MAX_EXTENSION_SOURCE_FILE_BYTES = 536870912
"""One source-closure file (``argv[0]`` is often an interpreter of about 100 MiB)."""
MAX_EXTENSION_CONFIGURATION_BYTES = 1048576
"""Each of ``--extension-configuration-file`` and its redacted twin (JSON objects)."""
