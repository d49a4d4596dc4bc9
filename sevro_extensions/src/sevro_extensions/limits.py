"""Bounds of the extension protocol (each has a row in docs/limits.md)."""

from __future__ import annotations

MAX_EXTENSION_STDOUT_BYTES = 8388608
"""One response on stdout; beyond it the process group is killed and the call is an error."""
MAX_EXTENSION_STDERR_BYTES = 65536
"""Stderr kept from one call, for diagnostics only; the rest is dropped."""
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
