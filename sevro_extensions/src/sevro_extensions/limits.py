"""Bounds of the extension protocol (each has a row in docs/limits.md)."""

from __future__ import annotations

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
MAX_EXTENSION_COMMAND_FILE_BYTES = 65536
"""The ``--extension-command-file`` JSON argv array."""
MAX_EXTENSION_COMMAND_ARGS = 256
"""Arguments in the extension's argv (``argv[0]`` included)."""
MAX_EXTENSION_SOURCE_FILES = 256
"""Files in the source closure (``argv[0]`` plus every ``--extension-source-file``)."""
MAX_EXTENSION_SOURCE_FILE_BYTES = 536870912
"""One source-closure file (``argv[0]`` is often an interpreter of about 100 MiB)."""
