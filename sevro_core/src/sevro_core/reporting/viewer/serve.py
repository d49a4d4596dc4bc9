"""``sevro view --serve``: the written page on 127.0.0.1 only, until Ctrl-C."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path


def serve(directory: Path, port: int, on_ready: Callable[[str], object]) -> None:
    """Serve ``directory`` read-only with ``http.server``; ``port`` 0 picks a free one."""
    import functools
    import http.server

    class _Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            """Requests are not logged: the page is the user's own."""

    handler = functools.partial(_Quiet, directory=str(directory))
    with http.server.ThreadingHTTPServer(("127.0.0.1", port), handler) as server:
        host, bound = server.server_address[:2]
        on_ready(f"http://{host!s}:{bound}/")
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()
