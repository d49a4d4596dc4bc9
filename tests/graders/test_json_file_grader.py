"""``sevro.json-file``: available / missing / malformed and pointer present / absent / equals."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from sevro_core import limits
from sevro_core.errors import ConfigurationError
from sevro_core.states import CheckStatus
from sevro_core.testing import grade, trial_view
from sevro_graders.json_file_grader import JsonFileGrader

grader = JsonFileGrader()
RESULT = {"status": "complete", "count": 2, "a/b": {"~k": None}, "items": [1, "two"]}
P, F, U = CheckStatus.PASSED, CheckStatus.FAILED, CheckStatus.UNAVAILABLE


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir(parents=True)
    (root / "result.json").write_text(json.dumps(RESULT))
    (root / "broken.json").write_text('{"status": ')
    (root / "dup.json").write_text('{"a": 1, "a": 2}')
    (root / "nan.json").write_text('{"a": NaN}')
    (root / "bom.json").write_bytes(b'\xef\xbb\xbf{"a": 1}')
    (root / "latin1.json").write_bytes(b'{"a": "caf\xe9"}')
    (root / "deep.json").write_text("[" * 100 + "]" * 100)
    (root / "dir.json").mkdir()
    (tmp_path / "outside.json").write_text("{}")
    (root / "link.json").symlink_to(tmp_path / "outside.json")
    (root / "linkdir").symlink_to(tmp_path)
    os.mkfifo(root / "fifo.json")
    return root


def check(tmp_path: Path, config: dict[str, Any]) -> tuple[CheckStatus, str | None]:
    outcome = grade(grader, config, trial_view(workspace=workspace(tmp_path)))
    return outcome.status, outcome.detail


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"path": "result.json", "expect": "available"}, P),
        ({"path": "result.json", "expect": "missing"}, F),
        ({"path": "result.json", "expect": "malformed"}, F),
        ({"path": "nothing.json", "expect": "available"}, F),
        ({"path": "nothing.json", "expect": "missing"}, P),
        ({"path": "nothing.json", "expect": "malformed"}, F),
        ({"path": "broken.json", "expect": "available"}, F),
        ({"path": "broken.json", "expect": "malformed"}, P),
        ({"path": "broken.json", "expect": "missing"}, F),
        # strict as sevro's own input: duplicate keys, NaN, BOM, non-UTF-8, deep nesting
        ({"path": "dup.json", "expect": "malformed"}, P),
        ({"path": "nan.json", "expect": "malformed"}, P),
        ({"path": "bom.json", "expect": "malformed"}, P),
        ({"path": "latin1.json", "expect": "malformed"}, P),
        ({"path": "deep.json", "expect": "malformed"}, P),
        ({"path": "dup.json", "expect": "available"}, F),
        # not a regular file: a definite state, never followed
        ({"path": "dir.json", "expect": "available"}, F),
        ({"path": "dir.json", "expect": "malformed"}, F),
        ({"path": "dir.json", "expect": "missing"}, F),
        ({"path": "link.json", "expect": "available"}, F),
        ({"path": "link.json", "expect": "missing"}, F),
        ({"path": "fifo.json", "expect": "malformed"}, F),
        ({"path": "linkdir/outside.json", "expect": "available"}, U),
        ({"path": "linkdir/outside.json", "expect": "missing"}, U),
        # pointers
        ({"path": "result.json", "expect": "present", "pointer": "/status"}, P),
        ({"path": "result.json", "expect": "present", "pointer": ""}, P),
        ({"path": "result.json", "expect": "present", "pointer": "/a~1b/~0k"}, P),
        ({"path": "result.json", "expect": "present", "pointer": "/items/1"}, P),
        ({"path": "result.json", "expect": "present", "pointer": "/items/2"}, F),
        ({"path": "result.json", "expect": "present", "pointer": "/optional"}, F),
        ({"path": "result.json", "expect": "absent", "pointer": "/optional"}, P),
        ({"path": "result.json", "expect": "absent", "pointer": "/status"}, F),
        ({"path": "result.json", "expect": "equals", "pointer": "/status", "value": "complete"}, P),
        ({"path": "result.json", "expect": "equals", "pointer": "/status", "value": "done"}, F),
        ({"path": "result.json", "expect": "equals", "pointer": "/count", "value": 2.0}, P),
        ({"path": "result.json", "expect": "equals", "pointer": "/a~1b/~0k", "value": None}, P),
        ({"path": "result.json", "expect": "equals", "pointer": "/nothing", "value": None}, F),
        ({"path": "result.json", "expect": "equals", "pointer": "", "value": RESULT}, P),
        ({"path": "result.json", "expect": "equals", "pointer": "/items", "value": [1]}, F),
        # a pointer into no document fails, whatever it asserts
        ({"path": "nothing.json", "expect": "absent", "pointer": "/x"}, F),
        ({"path": "broken.json", "expect": "absent", "pointer": "/x"}, F),
        ({"path": "linkdir/outside.json", "expect": "absent", "pointer": "/x"}, U),
    ],
)
def test_expectations(tmp_path: Path, config: dict[str, Any], expected: CheckStatus) -> None:
    status, detail = check(tmp_path, config)
    assert status is expected, detail
    assert (detail is None) == (status is P)


@pytest.mark.parametrize(
    ("config", "detail"),
    [
        ({"path": "result.json", "expect": "missing"}, "'result.json' exists"),
        ({"path": "result.json", "expect": "malformed"}, "'result.json' is valid JSON"),
        ({"path": "dir.json", "expect": "missing"}, "'dir.json' exists (directory)"),
        ({"path": "nothing.json", "expect": "available"}, "'nothing.json' does not exist"),
        (
            {"path": "dup.json", "expect": "available"},
            "'dup.json' is not valid JSON (dup.json#/a: duplicate key 'a')",
        ),
        (
            {"path": "result.json", "expect": "equals", "pointer": "/status", "value": "x"},
            "the value at /status does not equal the expected value",
        ),
        (
            {"path": "result.json", "expect": "present", "pointer": "/x/y"},
            "pointer /x/y not found",
        ),
    ],
)
def test_details(tmp_path: Path, config: dict[str, Any], detail: str) -> None:
    assert check(tmp_path, config)[1] == detail


def test_a_file_over_the_bound_is_unavailable_but_not_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(limits, "MAX_CHECKED_FILE_BYTES", 4)
    for expect in ("available", "malformed"):
        status, detail = check(tmp_path / expect, {"path": "result.json", "expect": expect})
        assert status is U
        assert detail == "'result.json' is larger than 4 bytes (not read)"
    assert check(tmp_path / "m", {"path": "result.json", "expect": "missing"}) == (
        F,
        "'result.json' exists (file)",
    )


@pytest.mark.parametrize(
    ("config", "pointer"),
    [
        ({"expect": "available"}, ""),
        ({"path": "a.json"}, ""),
        ({"path": "a.json", "expect": "valid"}, "/expect"),
        ({"path": "a.json", "expect": "present"}, ""),
        ({"path": "a.json", "expect": "equals", "pointer": "/a"}, ""),
        ({"path": "a.json", "expect": "available", "pointer": "/a"}, ""),
        ({"path": "a.json", "expect": "present", "pointer": "/a", "value": 1}, ""),
        ({"path": "a.json", "expect": "present", "pointer": "a"}, "/pointer"),
        ({"path": "a.json", "expect": "present", "pointer": "/a~2"}, "/pointer"),
        ({"path": "a.json", "expect": "present", "pointer": 1}, "/pointer"),
        ({"path": "../a.json", "expect": "available"}, "/path"),
        ({"path": "a.json", "expect": "available", "extra": 1}, "/extra"),
    ],
)
def test_bad_configuration_is_refused_with_a_pointer(config: dict[str, Any], pointer: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        grader.compile(config)
    assert caught.value.pointer == pointer
