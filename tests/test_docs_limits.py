"""docs/limits.md lists every constant of sevro_core.limits with its value."""

from __future__ import annotations

import re
from pathlib import Path

from sevro_core import limits

DOC = Path(__file__).resolve().parent.parent / "docs" / "limits.md"


def test_limits_table_matches_the_code() -> None:
    rows = dict(re.findall(r"^\| `([A-Z_]+)` \| ([0-9.]+) \|", DOC.read_text(), re.MULTILINE))
    constants = {
        name: value
        for name, value in vars(limits).items()
        if name.isupper() and name not in ("KIB", "MIB")
    }
    assert set(rows) == set(constants)
    for name, value in constants.items():
        assert float(rows[name]) == value, name
