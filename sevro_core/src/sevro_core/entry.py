"""The ``sevro`` entry point: SIGINT or SIGTERM at any point of start-up ends with one line.

Importing the CLI (typer, click, sevro's modules) takes tens of milliseconds; a Ctrl-C there
used to print ``KeyboardInterrupt`` frames, and SIGTERM killed the process without a word. This
module imports only ``signal`` and ``sys`` (not even ``typing``: it is the first sevro code to
run), turns SIGTERM into :class:`Terminated` (a ``KeyboardInterrupt``), records which signal
came, and catches both around the whole CLI. During a run, :mod:`sevro_core.run.signals` replaces
these handlers with ones that cancel the run instead.
"""

from __future__ import annotations

import signal
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from types import FrameType
    from typing import NoReturn

EXIT_CODES = {"SIGINT": 130, "SIGTERM": 143}

received: list[str] = []
"""The signals that arrived outside a run, first first (``list.append`` takes no lock)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived while no run was there to cancel."""


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
