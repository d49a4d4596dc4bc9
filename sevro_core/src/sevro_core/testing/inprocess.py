"""Running the ``sevro`` CLI inside the test process (pytest's ``runpytest_inprocess``).

An in-process run is fast and sees the test's monkeypatches (``sevro_plugins``,
``fake_processes``). The CLI is written for a process of its own, so everything it touches
that outlives a call is put back afterwards: ``sys.argv``, the standard streams, the working
directory, the environment, the SIGINT/SIGTERM handlers, structlog's configuration, the cyclic
garbage collector's switch, the modules of ``--plugin`` files and the build-digest cache.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sevro_core.testing.cliresult import CliResult

_LOCAL_PLUGIN_PREFIX = "sevro_local_plugin_"


def run_in_process(
    args: Sequence[object],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> CliResult:
    """Run ``sevro ARGS`` (each turned into a string: paths, numbers) through its console entry
    point in this process; never raises for what the CLI does (exit codes, tracebacks land in
    the result as they would on a terminal).
    """
    from sevro_core import entry
    from sevro_core.testing.cliresult import CliResult

    stdout, stderr = io.StringIO(), io.StringIO()
    with _restored_state(), _streams(stdout, stderr):
        os.environ.update(env or {})
        if cwd is not None:
            os.chdir(cwd)
        sys.argv = ["sevro", *map(str, args)]
        code: Any = 0
        try:
            entry.main()
        except SystemExit as exc:
            code = exc.code
        except Exception as exc:  # a bug escaping the CLI: shown like the interpreter would
            import traceback

            stderr.write("".join(traceback.format_exception(exc)))
            code = 1
    return CliResult(_exit_code(code), stdout.getvalue(), stderr.getvalue())


def _exit_code(code: Any) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    return 1  # sys.exit("message") prints the message and exits 1


@contextlib.contextmanager
def _streams(stdout: io.StringIO, stderr: io.StringIO) -> Iterator[None]:
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = stdout, stderr
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


@contextlib.contextmanager
def _restored_state() -> Iterator[None]:
    import gc

    import structlog

    from sevro_core import entry
    from sevro_core.run import provenance

    argv = list(sys.argv)
    cwd = os.getcwd()
    environ = dict(os.environ)
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    logging = structlog.get_config()
    modules = set(sys.modules)
    collecting = gc.isenabled()  # sevro report pauses the cyclic collector
    try:
        yield
    finally:
        sys.argv = argv
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(environ)
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        structlog.configure(**logging)
        if collecting:
            gc.enable()
        entry.received.clear()
        for name in set(sys.modules) - modules:
            if name.startswith(_LOCAL_PLUGIN_PREFIX):
                del sys.modules[name]
        provenance._tree_digest.cache_clear()  # a test may change a plugin's files next
