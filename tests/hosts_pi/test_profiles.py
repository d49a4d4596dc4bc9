"""Extension bundles copied and proven unchanged, the profile's environment, and when the
runtime-profile receipt is complete (no pi process)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sevro_core.api import Completeness, ExtensionBundle, HostFailure, HostProfile, RuntimeProfile
from sevro_hosts_pi import profiles

FILES = {"extensions/probe.mjs": b"export default () => {};\n", "lib/data.json": b"{}\n"}


def _bundle() -> ExtensionBundle:
    return ExtensionBundle("extensions/probe.mjs", FILES, profiles.files_digest(FILES))


def _runtime(*bundles: ExtensionBundle) -> RuntimeProfile:
    return RuntimeProfile("pi", False, bundles, {"MODE": "x"}, ("INHERITED",))


def test_bundles_are_copied_and_a_change_is_never_unchanged(tmp_path: Path) -> None:
    bundle = _bundle()
    (entry,) = profiles.copy_bundles(_runtime(bundle), tmp_path)
    root = profiles.bundle_root(tmp_path, 0)
    assert entry == root / "extensions" / "probe.mjs" and entry.read_bytes() == FILES[bundle.entry]
    same = profiles.bundle_report(bundle, root)
    assert same == {
        "entry": "extensions/probe.mjs",
        "digest": bundle.digest,
        "digestAfter": bundle.digest,
        "unchanged": True,
    }
    (root / "lib" / "extra.txt").write_text("new")  # a file added
    added = profiles.bundle_report(bundle, root)
    assert added["unchanged"] is False and added["digestAfter"] not in (None, bundle.digest)
    (root / "lib" / "extra.txt").unlink()
    entry.write_bytes(b"changed")  # a file edited
    assert profiles.bundle_report(bundle, root)["unchanged"] is False
    entry.unlink()
    entry.symlink_to(root / "lib" / "data.json")  # a link is never read through
    linked = profiles.bundle_report(bundle, root)
    assert linked["unchanged"] is False and linked["digestAfter"] is None


def test_the_environment_has_literals_and_inherited_values(tmp_path: Path) -> None:
    runtime = _runtime()
    assert profiles.environment(None, {}) == {}
    assert profiles.environment(runtime, {"INHERITED": "v", "OTHER": "o"}) == {
        "MODE": "x",
        "INHERITED": "v",
    }
    with pytest.raises(HostFailure, match="missing inherited variable INHERITED"):
        profiles.environment(runtime, {})


def test_the_receipt_is_complete_only_when_everything_was_applied() -> None:
    profile = HostProfile(tools=("read", "probe"), runtime=_runtime(_bundle()))
    good = [profiles.TurnOffer(1, (("read", "probe"), ("probe", "read")))]
    unchanged = [{"unchanged": True}]
    state, data = profiles.runtime_observation_data(profile, good, list(unchanged), 1)
    assert state is Completeness.COMPLETE  # the same tools, in any order
    same = [profiles.TurnOffer(1, (("read", "probe"), ("read", "probe")))]
    assert data["tools"] == {"declared": ["read", "probe"], "offered": [["read", "probe"]]}
    assert data["environment"] == {"literal": {"MODE": "x"}, "inherit": ["INHERITED"]}
    controls = {
        "a request without the custom tool": ([profiles.TurnOffer(1, (("read",),))], unchanged, 1),
        "a later request without it": (
            [profiles.TurnOffer(1, (("read", "probe"), ("read",)))],
            unchanged,
            1,
        ),
        "a turn not observed": ([profiles.TurnOffer(1, None)], unchanged, 1),
        "a turn missing": (same, unchanged, 2),
        "a bundle changed": (same, [{"unchanged": False}], 1),
    }
    for what, (offers, bundles, turns) in controls.items():
        state, _ = profiles.runtime_observation_data(profile, offers, list(bundles), turns)
        assert state is Completeness.PARTIAL, what
