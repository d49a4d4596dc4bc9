"""How sevro ends when SIGINT or SIGTERM arrives outside a run: one line, exit 130 or 143.

Shared by :mod:`sevro_core.entry` (which installs the start-up handlers and catches around the
whole CLI) and :mod:`sevro_core.cli` (which catches inside Typer); it sits below both so
neither imports the other's module. Like the entry point, it imports only ``signal`` and
``sys`` (not even ``typing``).
"""

from __future__ import annotations

import signal
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import NoReturn

EXIT_CODES = {"SIGINT": 130, "SIGTERM": 143}

received: list[str] = []
"""The signals that arrived outside a run, first first (``list.append`` takes no lock)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived while no run was there to cancel."""


def interrupted(exc: KeyboardInterrupt) -> NoReturn:
    """Ignore further signals, say which one stopped sevro, exit 130 (SIGINT) or 143 (SIGTERM)."""
    while True:
        try:  # a second signal may land here too: it must not escape as a traceback
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            break
        except KeyboardInterrupt:
            continue
    name = "SIGTERM" if isinstance(exc, Terminated) else "SIGINT"
    received.clear()  # reported here: the SystemExit below must pass main() unchanged
    sys.stderr.write(f"sevro: interrupted by {name}\n")
    sys.exit(EXIT_CODES[name])
