"""Bounds only the Ray executor applies (docs/limits.md lists them with the core's)."""

from __future__ import annotations

RAY_CANCEL_GRACE_S = 30.0
"""Seconds a cancelled run waits for its remote trials to stop on the relayed cancel token (and
ship their cancelled evidence) before it force-kills their workers (those trials are lost)."""

RAY_DOCTOR_TIMEOUT_S = 300.0
"""Seconds the per-node doctor may take on all nodes together before the run is refused."""

RAY_CANCEL_POLL_S = 1.0
"""Seconds between a remote trial's looks at the owner's cancel flag."""

RAY_CONNECT_TIMEOUT_S = 10.0
"""Seconds the owner waits for the head node's GCS port to accept a connection before the run
is refused (``ray.init`` alone would retry for minutes)."""

RAY_MAX_REASON_CHARS = 400
"""Characters of Ray's reason kept in a lost trial's message or a refused node's line."""

RAY_WARM_TIMEOUT_S = 60.0
"""Seconds the owner waits for the run's workers to start and plan the run before the first
trial is sent (workers not ready by then join the run as they come up)."""

RAY_COLLECT_POLL_S = 0.05
"""Seconds the owner's collector waits on the trials out before it looks again (at calls made
since, and at the cancel token); a call made while it is idle wakes it at once."""

RAY_RESUBMITS = 1
"""Times a trial whose worker died before it started is submitted again (then it is lost)."""
