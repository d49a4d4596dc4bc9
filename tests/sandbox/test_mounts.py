"""The mount plan both backends share: parents first, hiding before exposing, no dead mounts."""

from __future__ import annotations

from pathlib import Path

from sevro_sandbox.mounts import Mount, plan_mounts
from tests.sandbox.conftest import Layout


def test_parents_come_first_and_the_workspace_is_exposed_after_its_hidden_root(
    layout: Layout,
) -> None:
    mounts = plan_mounts(layout.policy())
    order = [(m.kind, m.path) for m in mounts]
    assert order.index((Mount.HIDE_DIRECTORY, layout.workspaces)) < order.index(
        (Mount.WRITABLE, layout.workspace)
    )
    assert (Mount.HIDE_FILE, layout.protected_file) in order
    depths = [len(path.parts) for _, path in order]
    assert depths == sorted(depths)


def test_a_root_inside_a_hidden_root_needs_no_mount_unless_re_exposed(layout: Layout) -> None:
    inner = layout.protected / "inner"
    inner.mkdir()
    inside_workspace = layout.workspace / "keep-out"
    inside_workspace.mkdir()
    policy = layout.policy(
        protected_roots=(layout.workspaces, layout.protected, inner, inside_workspace)
    )
    paths = {m.path: m.kind for m in plan_mounts(policy)}
    assert inner not in paths, "already hidden by its parent"
    assert paths[inside_workspace] is Mount.HIDE_DIRECTORY, "re-exposed, so hidden again"


def test_a_root_that_vanished_is_skipped(layout: Layout, tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    mounts = plan_mounts(layout.policy(protected_roots=(gone,)))
    assert gone not in {m.path for m in mounts}


def test_a_hidden_root_holding_an_exposed_root_keeps_its_own_mount(layout: Layout) -> None:
    """Hidden inside a hidden parent, the workspace root still gets its own 0111 tmpfs: the
    directories the backend creates on the way to the workspace would be listable otherwise."""
    policy = layout.policy(protected_roots=(layout.root, layout.workspaces))
    paths = {m.path: m.kind for m in plan_mounts(policy)}
    assert paths[layout.root] is Mount.HIDE_DIRECTORY
    assert paths[layout.workspaces] is Mount.HIDE_DIRECTORY
    assert paths[layout.workspace] is Mount.WRITABLE
