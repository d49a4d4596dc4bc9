"""The ``sevro`` entry point: SIGINT or SIGTERM at any point of start-up ends with one line.

Importing the CLI (typer, click, sevro's modules) takes tens of milliseconds; a Ctrl-C there
used to print ``KeyboardInterrupt`` frames, and SIGTERM killed the process without a word. This
module imports only ``signal`` and :mod:`sevro_core.interrupts` (itself only ``signal`` and
``sys``; not even ``typing``: this is the first sevro code to run), turns SIGTERM into
:class:`~sevro_core.interrupts.Terminated` (a ``KeyboardInterrupt``), records which signal came,
and catches both around the whole CLI. During a run, :mod:`sevro_core.run.signals` replaces
these handlers with ones that cancel the run instead.
"""

from __future__ import annotations

import signal

from sevro_core.interrupts import Terminated, interrupted, received

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from types import FrameType


def _on_signal(signum: int, _frame: FrameType | None) -> None:
    terminated = signum == signal.SIGTERM
    received.append("SIGTERM" if terminated else "SIGINT")
    raise Terminated if terminated else KeyboardInterrupt


def main() -> None:
    """Console entry point: the CLI, with start-up signals ending in one line."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) is not signal.SIG_IGN:  # nohup and `&` keep theirs ignored
            signal.signal(sig, _on_signal)
    try:
        from sevro_core.cli import main as cli_main

        cli_main()
    except KeyboardInterrupt as exc:
        interrupted(exc)
    except SystemExit:
        # Typer turns a KeyboardInterrupt inside a command into a silent exit 130.
        if received:
            interrupted(Terminated() if received[0] == "SIGTERM" else KeyboardInterrupt())
        raise
