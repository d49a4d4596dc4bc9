"""A trial's sandbox for grader tests that run commands (``view.isolation``).

The engine binds one :class:`~sevro_core.isolation.sandbox.Isolation` per trial to a fresh
workspace and a private directory beside it; :func:`trial_isolation` does the same under a
directory the test owns, with the sandbox a run would select (``auto`` probes the installed
backends for real; ``none`` is the operator's explicit opt-out).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sevro_core.isolation.sandbox import Isolation
    from sevro_core.models import CancelToken


def trial_isolation(
    root: Path,
    *,
    sandbox: str = "auto",
    network: str = "none",
    fixture_bin_dir: Path | None = None,
    cancel: CancelToken | None = None,
    environ: Mapping[str, str] | None = None,
) -> Isolation:
    """A sandbox bound to a new workspace under ``root`` (give it ``tmp_path``); plugins are
    loaded as a run loads them (``environ`` is for ``SEVRO_LOAD_PLUGINS``)."""
    from sevro_core.fixtures.workspace import PRIVATE_PREFIX, create_workspace
    from sevro_core.isolation.sandbox import select_sandbox
    from sevro_core.models import CancelToken
    from sevro_core.plugin.manager import load_plugins

    selection = select_sandbox(load_plugins(environ=environ), sandbox, network, ())
    workspaces = root / "workspaces"
    workspaces.mkdir(mode=0o700, exist_ok=True)
    return selection.bind(
        workspace=create_workspace(workspaces),
        private_root=create_workspace(workspaces, prefix=PRIVATE_PREFIX),
        cancel=cancel or CancelToken(),
        fixture_bin_dir=fixture_bin_dir,
    )
