"""structlog configuration: diagnostics go to stderr, never stdout (which ``--json`` owns)."""

from __future__ import annotations

import logging
import sys
from typing import TextIO, cast


def configure(log_format: str = "console", verbosity: int = 0) -> None:
    import structlog

    level = {0: logging.WARNING, 1: logging.INFO}.get(verbosity, logging.DEBUG)
    renderer: structlog.typing.Processor
    if log_format == "json":
        renderer = structlog.processors.JSONRenderer(sort_keys=True)
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=cast(TextIO, _CurrentStderr())),
        cache_logger_on_first_use=False,
    )


class _CurrentStderr:
    """Whatever ``sys.stderr`` is at each write, not at configuration: while a run's live table
    is drawn, rich puts a proxy there that prints log lines above the table instead of into it."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()
