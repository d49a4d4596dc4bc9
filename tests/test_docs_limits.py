"""docs/limits.md lists every constant of every limits module (the core's and the hosts')."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
from pathlib import Path
from types import ModuleType

DOC = Path(__file__).resolve().parent.parent / "docs" / "limits.md"


def limits_modules() -> list[ModuleType]:
    """``sevro_core.limits`` and every installed ``sevro_*`` distribution's ``limits`` module."""
    names = sorted(m.name for m in pkgutil.iter_modules() if m.name.startswith("sevro_"))
    return [
        importlib.import_module(f"{name}.limits")
        for name in names
        if importlib.util.find_spec(f"{name}.limits") is not None
    ]


def test_the_host_limits_are_found() -> None:
    found = {module.__name__ for module in limits_modules()}
    assert {"sevro_core.limits", "sevro_hosts_claude.limits", "sevro_hosts_codex.limits"} <= found


def test_limits_table_matches_the_code() -> None:
    rows = dict(re.findall(r"^\| `([A-Z_]+)` \| ([0-9.]+) \|", DOC.read_text(), re.MULTILINE))
    constants: dict[str, object] = {}
    for module in limits_modules():
        for name, value in vars(module).items():
            if name.isupper() and name not in ("KIB", "MIB"):
                assert name not in constants, f"{name} is defined in two limits modules"
                constants[name] = value
    assert set(rows) == set(constants)
    for name, value in constants.items():
        assert float(rows[name]) == value, name
