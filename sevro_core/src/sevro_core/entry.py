"""The ``sevro`` entry point: SIGINT or SIGTERM at any point of start-up ends with one line.

Importing the CLI (typer, click, sevro's modules) takes tens of milliseconds; a Ctrl-C there
used to print ``KeyboardInterrupt`` frames, and SIGTERM killed the process without a word. This
module imports only ``signal`` and ``sys`` (not even ``typing``: it is the first sevro code to
run), turns SIGTERM into :class:`Terminated` (a ``KeyboardInterrupt``), and catches both around
the whole CLI. During a run, :mod:`sevro_core.signals` replaces these handlers with ones that
cancel the run instead.
"""

from __future__ import annotations

import signal
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from types import FrameType
    from typing import NoReturn

EXIT_SIGINT = 130
EXIT_SIGTERM = 143


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived while no run was there to cancel."""


def _terminate(_signum: int, _frame: FrameType | None) -> None:
    raise Terminated


def main() -> None:
    """Console entry point: the CLI, with start-up signals ending in one line."""
    signal.signal(signal.SIGTERM, _terminate)
    try:
        from sevro_core.cli import main as cli_main

        cli_main()
    except KeyboardInterrupt as exc:
        interrupted(exc)


def interrupted(exc: KeyboardInterrupt) -> NoReturn:
    """Ignore further signals, say which one stopped sevro, exit 130 (SIGINT) or 143 (SIGTERM)."""
    while True:
        try:  # a second signal may land here too: it must not escape as a traceback
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            break
        except KeyboardInterrupt:
            continue
    name, code = (
        ("SIGTERM", EXIT_SIGTERM) if isinstance(exc, Terminated) else ("SIGINT", EXIT_SIGINT)
    )
    sys.stderr.write(f"sevro: interrupted by {name}\n")
    sys.exit(code)
