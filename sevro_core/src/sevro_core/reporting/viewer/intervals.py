"""The page's Wilson intervals, computed by a helper process started before the evidence is
verified. Importing statsmodels (with SciPy and pandas) is most of a second of CPU; the helper
spends it on the core the main process leaves idle while it reads run.json and writes the page,
instead of competing with the workers that verify the trials. It is the same function
(``experiments.statistics.wilson_interval``) and the same numbers; if the helper fails or is
slow, the main process computes them itself."""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from types import TracebackType

from sevro_core.limits import VIEWER_INTERVALS_SECONDS

Counts = Sequence[tuple[int, int]]
"""(passes, decided) per row."""
Found = list[tuple[float, float] | None]
"""Each row's interval as (low, high), or None when it has no decided trial."""


def wilson_intervals(counts: Counts) -> Found:
    """Each row's 95 % Wilson interval, in this process."""
    from sevro_core.experiments.statistics import wilson_interval

    found: Found = []
    for passes, decided in counts:
        interval = wilson_interval(passes, decided)
        found.append(None if interval is None else (interval.low, interval.high))
    return found


def _answer(text: bytes, counts: Counts) -> Found | None:
    """The helper's reply, only if it is exactly one interval (or None) per row in [0, 1]."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    if not isinstance(parsed, list) or len(parsed) != len(counts):
        return None
    found: Found = []
    for item, (_, decided) in zip(parsed, counts, strict=True):
        if decided == 0 or item is None:  # None exactly where no trial was decided
            if decided != 0 or item is not None:
                return None
            found.append(None)
            continue
        numbers = item if isinstance(item, list) and len(item) == 2 else []
        if not all(isinstance(v, float) and math.isfinite(v) and 0 <= v <= 1 for v in numbers):
            return None
        if len(numbers) != 2 or numbers[0] > numbers[1]:
            return None
        found.append((numbers[0], numbers[1]))
    return found


class IntervalHelper:
    """A ``python -m`` of this module (or ``command``), started now, answering once; killed
    with its process group on exit."""

    def __init__(self, command: Sequence[str] = (sys.executable, "-m", __name__)) -> None:
        try:
            self._process: subprocess.Popen[bytes] | None = subprocess.Popen(
                list(command),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError:
            self._process = None

    def intervals(self, counts: Counts) -> Found:
        """Each row's interval, from the helper when it answers well, else computed here."""
        answer = self._ask(counts)
        return answer if answer is not None else wilson_intervals(counts)

    def _ask(self, counts: Counts) -> Found | None:
        process, self._process = self._process, None
        if process is None:
            return None
        try:
            out, _ = process.communicate(
                json.dumps([list(c) for c in counts]).encode(), timeout=VIEWER_INTERVALS_SECONDS
            )
        except (OSError, subprocess.TimeoutExpired):
            _kill(process)
            return None
        return _answer(out, counts) if process.returncode == 0 else None

    def __enter__(self) -> IntervalHelper:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._process is not None:
            _kill(self._process)
            self._process = None


def _kill(process: subprocess.Popen[bytes]) -> None:
    """The helper's process group ended and reaped."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def main() -> None:
    """The helper: (passes, decided) pairs as JSON on stdin, their intervals as JSON on stdout."""
    from sevro_core.experiments.statistics import wilson_interval

    wilson_interval(1, 2)  # import the statistics before the question arrives
    counts = [(int(p), int(n)) for p, n in json.load(sys.stdin)]
    json.dump(wilson_intervals(counts), sys.stdout)


if __name__ == "__main__":
    main()
